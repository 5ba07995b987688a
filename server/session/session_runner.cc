#include "server/session/session_runner.h"

#include <exception>
#include <utility>

#include <spdlog/spdlog.h>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>
#include <asio/post.hpp>

#include "protocol/text.h"

namespace brig::session {

namespace {

// Single-threaded, as every runner is: they share the server's io_context.
std::uint64_t last_runner_number = 0;

std::string describe(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

void SessionRunner::CallContext::progress(double progress, std::optional<double> total,
                                          std::string message) {
  if (call_.cancelled) return;
  if (auto line = runner_.session_.progress(call_.id, progress, total, std::move(message))) {
    runner_.transport_->send(std::move(*line));
  }
}

void SessionRunner::CallContext::log(protocol::LogLevel level, protocol::Json data) {
  if (call_.cancelled) return;
  if (auto line = runner_.session_.log(call_.id, level, call_.tool, std::move(data))) {
    runner_.transport_->send(std::move(*line));
  }
}

bool SessionRunner::CallContext::cancelled() const {
  return call_.cancelled;
}

const std::optional<process::PeerCredentials>& SessionRunner::CallContext::peer() const {
  return runner_.transport_->peer();
}

asio::awaitable<void> SessionRunner::CallContext::room_for_reply() {
  // The runner holds the transport for as long as a call runs.
  if (runner_.transport_->output_backlogged()) co_await runner_.transport_->output_caught_up();
}

// A socket peer's calls take its identity; stdio's have no peer: brig's own.
const std::optional<process::PeerCredentials>& SessionRunner::CallContext::principal() const {
  return runner_.transport_->peer();
}

std::shared_ptr<SessionRunner> SessionRunner::create(
    const asio::any_io_executor& executor, std::shared_ptr<transport::Transport> transport,
    const tools::Registry& registry, const SessionConfig& config,
    std::function<void()> on_finished) {
  return std::make_shared<SessionRunner>(executor, std::move(transport), registry, config,
                                         std::move(on_finished));
}

SessionRunner::SessionRunner(const asio::any_io_executor& executor,
                             std::shared_ptr<transport::Transport> transport,
                             const tools::Registry& registry, const SessionConfig& config,
                             std::function<void()> on_finished)
    : executor_(executor),
      transport_(std::move(transport)),
      registry_(registry),
      session_(config.info, config.instructions, registry.list(), config.options),
      framer_(config.options.max_line_bytes),
      on_finished_(std::move(on_finished)),
      number_(++last_runner_number) {}

void SessionRunner::start() {
  auto self = shared_from_this();
  transport_->start(transport::TransportHandlers{
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
  const tools::Tool* tool = registry_.find(call.tool_index, call.tool);
  if (tool == nullptr) {
    // The session only emits calls for tools in the catalogue it was given,
    // which came from this registry; kept as an answer, never a crash.
    perform(session_.fail(call.call, "tool " + call.tool + " is not registered"));
    return;
  }
  const std::uint64_t id = call.call.value;
  RunningCall* slot = nullptr;
  if (spare_calls_.empty()) {
    slot = &calls_.try_emplace(id, *this).first->second;
  } else {
    auto node = std::move(spare_calls_.back());
    spare_calls_.pop_back();
    node.key() = id;
    node.mapped().cancelled = false;
    node.mapped().returned = false;
    slot = &calls_.insert(std::move(node)).position->second;
  }
  RunningCall& running = *slot;
  running.id = call.call;
  running.tool = std::move(call.tool);
  spdlog::debug("{}: call {} ({}) started", transport_->name(), id, running.tool);
  // The handler's coroutine is co_spawned itself, without a wrapper: a
  // coroutine around it cost a frame and a co_await on every call. co_spawn
  // starts it here and now (dispatch, on this executor), so no cancel can
  // come before it begins.
  std::optional<asio::awaitable<protocol::ToolResult>> handler;
  try {
    handler.emplace(tool->handler(std::move(call.arguments), running.context));
  } catch (...) {
    // Only a handler that is not a coroutine can throw before it starts.
    return finish_call(id, std::current_exception(), {});
  }
  asio::co_spawn(
      executor_, std::move(*handler),
      asio::bind_cancellation_slot(
          running.cancel.slot(),
          [self = shared_from_this(), id](std::exception_ptr failure, protocol::ToolResult result) {
            self->finish_call(id, std::move(failure), std::move(result));
          }));
}

void SessionRunner::cancel_call(RunningCall& call) {
  if (call.cancelled || call.returned) return;
  call.cancelled = true;
  call.cancel.emit(asio::cancellation_type::terminal);
}

void SessionRunner::finish_call(std::uint64_t id, std::exception_ptr failure,
                                protocol::ToolResult result) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return;
  RunningCall& running = it->second;
  running.returned = true;
  // A cancelled call is never answered: the session forgot a client-cancelled
  // one, and a shutdown or disconnect has no one left to answer.
  if (!running.cancelled) {
    if (!failure) {
      perform(session_.complete(running.id, std::move(result)));
    } else {
      const std::string why = describe(failure);
      spdlog::error("{}: call {} ({}) failed: {}", transport_->name(), id, running.tool, why);
      perform(session_.fail(running.id, "tool " + running.tool + " failed: " + why));
    }
  }
  spdlog::debug("{}: call {} ({}) returned", transport_->name(), id, running.tool);
  // The signal is still referenced by co_spawn's frames until this handler
  // returns: free it from a fresh handler.
  returned_.push_back(id);
  if (sweep_posted_) return;
  sweep_posted_ = true;
  asio::post(executor_, [self = shared_from_this()] { self->sweep_returned(); });
}

void SessionRunner::sweep_returned() {
  sweep_posted_ = false;
  // A freed call's node is kept for a later one, up to a burst's worth: a
  // pipelining client's calls otherwise cost a malloc and a free each. Its
  // cancellation signal is reused too; the next co_spawn replaces the
  // handler in its slot.
  constexpr std::size_t kSpareCalls = 256;
  for (std::uint64_t id : returned_) {
    auto node = calls_.extract(id);
    if (!node.empty() && spare_calls_.size() < kSpareCalls) spare_calls_.push_back(std::move(node));
  }
  returned_.clear();
  maybe_finished();
}

void SessionRunner::maybe_finished() {
  if (!transport_closed_ || !calls_.empty() || !on_finished_) return;
  std::function<void()> done = std::move(on_finished_);
  on_finished_ = nullptr;
  done();
}

}  // namespace brig::session
