#include "server/session_runner.h"

#include <exception>
#include <utility>

#include <spdlog/spdlog.h>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>
#include <asio/post.hpp>

#include "protocol/text.h"

namespace brig::server {

class SessionRunner::CallContext final : public ToolContext {
 public:
  CallContext(SessionRunner& runner, RunningCall& call) : runner_(runner), call_(call) {}

  void progress(double progress, std::optional<double> total, std::string message) override {
    if (call_.cancelled) return;
    if (auto line = runner_.session_.progress(call_.id, progress, total, std::move(message))) {
      runner_.transport_->send(std::move(*line));
    }
  }
  void log(protocol::LogLevel level, protocol::Json data) override {
    if (call_.cancelled) return;
    if (auto line = runner_.session_.log(call_.id, level, call_.tool, std::move(data))) {
      runner_.transport_->send(std::move(*line));
    }
  }
  bool cancelled() const override { return call_.cancelled; }
  const std::optional<PeerCredentials>& peer() const override { return runner_.transport_->peer(); }

 private:
  SessionRunner& runner_;
  RunningCall& call_;
};

std::shared_ptr<SessionRunner> SessionRunner::create(const asio::any_io_executor& executor,
                                                     std::shared_ptr<Transport> transport,
                                                     const Registry& registry,
                                                     const SessionConfig& config,
                                                     std::function<void()> on_finished) {
  return std::make_shared<SessionRunner>(executor, std::move(transport), registry, config,
                                         std::move(on_finished));
}

SessionRunner::SessionRunner(const asio::any_io_executor& executor,
                             std::shared_ptr<Transport> transport, const Registry& registry,
                             const SessionConfig& config, std::function<void()> on_finished)
    : executor_(executor),
      transport_(std::move(transport)),
      registry_(registry),
      session_(config.info, config.instructions, registry.list(), config.options),
      framer_(config.options.max_line_bytes),
      on_finished_(std::move(on_finished)) {}

void SessionRunner::start() {
  auto self = shared_from_this();
  transport_->start(TransportHandlers{
      .on_bytes = [self](std::string_view bytes) { self->on_bytes(bytes); },
      .on_input_end = [self](std::optional<Error> why) { self->on_input_end(why); },
      .on_closed =
          [self] {
            self->transport_closed_ = true;
            self->shutdown();
            self->maybe_finished();
          },
  });
}

void SessionRunner::shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  for (auto& [id, call] : calls_) cancel_call(call);
  transport_->close();
}

void SessionRunner::on_bytes(std::string_view bytes) {
  if (shutting_down_) return;
  framer_.feed(bytes, [this](protocol::Frame::Kind kind, std::string_view line) {
    if (kind == protocol::Frame::Kind::too_long) {
      spdlog::warn("{}: dropped a line longer than {} bytes", transport_->name(),
                   framer_.max_line_bytes());
      perform(session_.on_too_long_line());
    } else {
      if (spdlog::should_log(spdlog::level::trace)) {
        spdlog::trace("{}: <- {}", transport_->name(), protocol::clip(line, 2000));
      }
      perform(session_.on_line(line));
    }
    return !shutting_down_;
  });
}

void SessionRunner::on_input_end(const std::optional<Error>& why) {
  if (why) {
    spdlog::warn("{}: {}", transport_->name(), why->to_string());
  } else {
    spdlog::debug("{}: end of input", transport_->name());
  }
  shutdown();
}

void SessionRunner::perform(std::vector<protocol::Action> actions) {
  for (protocol::Action& action : actions) {
    if (auto* send = std::get_if<protocol::Send>(&action)) {
      if (spdlog::should_log(spdlog::level::trace)) {
        spdlog::trace("{}: -> {}", transport_->name(), protocol::clip(send->line, 2000));
      }
      transport_->send(std::move(send->line));
    } else if (auto* call = std::get_if<protocol::Call>(&action)) {
      start_call(std::move(*call));
    } else if (auto* cancel = std::get_if<protocol::Cancel>(&action)) {
      if (auto it = calls_.find(cancel->call.value); it != calls_.end()) {
        spdlog::debug("{}: call {} ({}) cancelled by the client", transport_->name(),
                      cancel->call.value, it->second.tool);
        cancel_call(it->second);
      }
    }
  }
}

void SessionRunner::start_call(protocol::Call call) {
  const Tool* tool = registry_.find(call.tool);
  if (tool == nullptr) {
    // The session only emits calls for tools in the catalogue it was given,
    // which came from this registry; kept as an answer, never a crash.
    perform(session_.fail(call.call, "tool " + call.tool + " is not registered"));
    return;
  }
  const std::uint64_t id = call.call.value;
  // Ids only grow: the new node goes at the end.
  RunningCall& running = calls_.try_emplace(calls_.end(), id)->second;
  running.id = call.call;
  running.tool = std::move(call.tool);
  spdlog::debug("{}: call {} ({}) started", transport_->name(), id, running.tool);

  auto self = shared_from_this();
  auto body = [](std::shared_ptr<SessionRunner> self, RunningCall& running, const Tool& tool,
                 protocol::Json arguments) -> asio::awaitable<void> {
    // co_spawn may start the body after later input was handled: a cancel
    // that came first would find no operation to stop.
    if (running.cancelled) co_return;
    CallContext ctx(*self, running);
    std::string failure;
    std::optional<protocol::ToolResult> result;
    try {
      result = co_await tool.handler(std::move(arguments), ctx);
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "unknown exception";
    }
    // A cancelled call is never answered: the session forgot a client-cancelled
    // one, and a shutdown or disconnect has no one left to answer.
    if (running.cancelled) co_return;
    if (result) {
      self->perform(self->session_.complete(running.id, std::move(*result)));
    } else {
      spdlog::error("{}: call {} ({}) failed: {}", self->transport_->name(), running.id.value,
                    running.tool, failure);
      self->perform(
          self->session_.fail(running.id, "tool " + running.tool + " failed: " + failure));
    }
  };
  asio::co_spawn(
      executor_, body(self, running, *tool, std::move(call.arguments)),
      asio::bind_cancellation_slot(running.cancel.slot(),
                                   [self, id](std::exception_ptr) { self->finish_call(id); }));
}

void SessionRunner::cancel_call(RunningCall& call) {
  if (call.cancelled || call.returned) return;
  call.cancelled = true;
  call.cancel.emit(asio::cancellation_type::terminal);
}

void SessionRunner::finish_call(std::uint64_t id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  it->second.returned = true;
  spdlog::debug("{}: call {} ({}) returned", transport_->name(), id, it->second.tool);
  // The signal is still referenced by co_spawn's frames until this handler
  // returns: free it from a fresh handler.
  returned_.push_back(id);
  if (sweep_posted_) return;
  sweep_posted_ = true;
  asio::post(executor_, [self = shared_from_this()] { self->sweep_returned(); });
}

void SessionRunner::sweep_returned() {
  sweep_posted_ = false;
  for (std::uint64_t id : returned_) calls_.erase(id);
  returned_.clear();
  maybe_finished();
}

void SessionRunner::maybe_finished() {
  if (!transport_closed_ || !calls_.empty() || !on_finished_) return;
  std::function<void()> done = std::move(on_finished_);
  on_finished_ = nullptr;
  done();
}

}  // namespace brig::server
