#include <signal.h>

#include <system_error>
#include <utility>

#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>

#include "server/spawner/spawner.h"
#include "server/spawner/spawner_state.h"

namespace brig::spawner {
namespace {

// Nobody will wait for this jail any more: end it. Its EXITED still comes
// and is dropped by the spawner's read loop.
void abandon(detail::JailState* state) {
  if (!state || state->outcome) return;
  state->owned = false;
  state->send_signal(SIGKILL);
}

}  // namespace

RunningJail::RunningJail(std::shared_ptr<detail::JailState> state) : state_(std::move(state)) {}
RunningJail::RunningJail(RunningJail&&) noexcept = default;

RunningJail& RunningJail::operator=(RunningJail&& o) noexcept {
  if (this != &o) {
    abandon(state_.get());
    state_ = std::move(o.state_);
  }
  return *this;
}

RunningJail::~RunningJail() {
  abandon(state_.get());
}

pid_t RunningJail::pid() const {
  return state_ ? state_->pid : -1;
}

std::vector<UniqueFd> RunningJail::take_listeners() {
  if (!state_) return {};
  return std::exchange(state_->listeners, {});
}

int RunningJail::signal(int sig) const {
  if (!state_ || state_->outcome) return ESRCH;
  return state_->send_signal(sig);
}

asio::awaitable<Result<jail::Outcome>> RunningJail::wait() {
  std::shared_ptr<detail::JailState> state = state_;
  if (!state) co_return std::unexpected(Error{"wait for a jail", "", "moved from", 0});
  if (state->waited)
    co_return std::unexpected(
        Error{"wait for a jail", std::to_string(state->pid), "already waited for", 0});
  while (!state->outcome) {
    std::error_code ec;
    co_await state->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!state->outcome && ec == asio::error::operation_aborted) {
      // Cancelled from outside (a client's cancel, a disconnect, a timeout
      // of the caller's own): the jail must not outlive the call.
      state->send_signal(SIGKILL);
      state->owned = false;
      throw std::system_error(ec);
    }
  }
  state->waited = true;
  co_return std::move(*state->outcome);
}

}  // namespace brig::spawner
