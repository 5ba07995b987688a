// SessionRunner: one connection's life. Binds a Transport to a
// protocol::Session: frames incoming bytes, feeds lines to the session,
// performs its actions (send, run a tool, cancel one), and answers each
// finished call in completion order.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/cancellation_signal.hpp>

#include "protocol/framing.h"
#include "protocol/session.h"
#include "server/tools/registry.h"
#include "server/transport/transport.h"

namespace brig::session {

// What every session of one server shares.
struct SessionConfig {
  protocol::ServerInfo info;
  std::string instructions;          // empty: none sent
  protocol::SessionOptions options;  // limits; options.max_line_bytes also sizes the framer
};

class SessionRunner : public std::enable_shared_from_this<SessionRunner> {
 public:
  // registry must outlive the runner and every call it starts. on_finished
  // runs once, after the transport has closed and the last call has returned.
  static std::shared_ptr<SessionRunner> create(const asio::any_io_executor& executor,
                                               std::shared_ptr<transport::Transport> transport,
                                               const tools::Registry& registry,
                                               const SessionConfig& config,
                                               std::function<void()> on_finished);

  SessionRunner(const asio::any_io_executor& executor,
                std::shared_ptr<transport::Transport> transport, const tools::Registry& registry,
                const SessionConfig& config, std::function<void()> on_finished);

  // Starts reading. Call once.
  void start();
  // Cancels every call in flight and closes the transport after flushing what
  // is already queued. Idempotent.
  void shutdown();

  // Tool calls whose handlers have not returned yet.
  std::size_t running_calls() const { return calls_.size(); }
  const transport::Transport& transport() const { return *transport_; }

 private:
  struct RunningCall;

  // What a call's handler gets besides its arguments.
  class CallContext final : public tools::ToolContext {
   public:
    CallContext(SessionRunner& runner, RunningCall& call) : runner_(runner), call_(call) {}
    void progress(double progress, std::optional<double> total, std::string message) override;
    void log(protocol::LogLevel level, protocol::Json data) override;
    bool cancelled() const override;
    const std::optional<process::PeerCredentials>& peer() const override;
    const std::optional<process::PeerCredentials>& principal() const override;
    std::uint64_t connection() const override { return runner_.number_; }
    asio::awaitable<void> room_for_reply() override;
    bool output_backlogged() const override { return runner_.transport_->output_backlogged(); }

   private:
    SessionRunner& runner_;
    RunningCall& call_;
  };

  struct RunningCall {
    explicit RunningCall(SessionRunner& runner) : context(runner, *this) {}
    protocol::CallId id;
    std::string tool;
    asio::cancellation_signal cancel;
    CallContext context;  // the handler's, for as long as it runs
    bool cancelled = false;
    bool returned = false;  // the handler's coroutine has finished
  };

  void on_bytes(std::string_view bytes);
  void on_input_end(const std::optional<Error>& why);
  void perform(std::vector<protocol::Action> actions);
  void start_call(protocol::Call call);
  void cancel_call(RunningCall& call);
  // Answers the call (unless cancelled) and sets it aside to be freed.
  void finish_call(std::uint64_t id, std::exception_ptr failure, protocol::ToolResult result);
  // Frees the calls finish_call() set aside; runs from its own handler.
  void sweep_returned();
  void maybe_finished();

  asio::any_io_executor executor_;
  std::shared_ptr<transport::Transport> transport_;
  const tools::Registry& registry_;
  protocol::Session session_;
  protocol::LineFramer framer_;
  std::function<void()> on_finished_;
  // Keyed by CallId value. A map node never moves, as the cancellation
  // signal must not.
  std::unordered_map<std::uint64_t, RunningCall> calls_;
  // Nodes of freed calls, reused by the next ones (see sweep_returned()).
  std::vector<std::unordered_map<std::uint64_t, RunningCall>::node_type> spare_calls_;
  // Calls whose coroutines have returned, to free from one later handler
  // (a burst of pipelined calls posts one sweep, not one handler each).
  std::vector<std::uint64_t> returned_;
  // This connection's number among every runner of the process (from 1).
  std::uint64_t number_;
  bool sweep_posted_ = false;
  bool shutting_down_ = false;
  bool transport_closed_ = false;
};

}  // namespace brig::session
