#include "server/spawner/jail_pool.h"

#include <poll.h>

#include "server/spawner/dumpable_spawn.h"
#include "server/spawner/spawner_loop.h"

namespace brig::spawner {

jail::JailSpec JailPool::key_of(jail::JailSpec spec) {
  spec.limits.wall_time.reset();
  return spec;
}

bool JailPool::still_waiting(const jail::RunningJail& jailed) {
  pollfd fds[2] = {{jailed.status_fd(), POLLIN, 0}, {jailed.pidfd(), POLLIN, 0}};
  return ::poll(fds, 2, 0) == 0;
}

std::optional<jail::RunningJail> JailPool::take(const jail::JailSpec& spec,
                                                const jail::ExecRequest& request) {
  jail::JailSpec key = key_of(spec);
  std::optional<jail::RunningJail> out;
  if (ready_ && (ready_->key != key || !still_waiting(ready_->jailed) ||
                 !jail::built_from_current_host(ready_->jailed, spec)))
    ready_.reset();
  if (ready_) {
    if (auto started = jail::start_command(ready_->jailed, request, spec.limits.wall_time)) {
      out = std::move(ready_->jailed);
      ready_.reset();
    } else if (!ready_->jailed.awaiting()) {
      ready_.reset();  // gone meanwhile; the fresh jail will say what is wrong
    }
    // Else the request is one it cannot take (too large, invalid): it keeps
    // waiting, and a fresh jail serves or refuses the request.
  }
  wanted_ = std::move(key);
  return out;
}

void JailPool::refill() {
  if (!wants_refill()) return;
  auto jailed = spawn_dumpable([&] { return jail::spawn_awaiting(*wanted_); });
  if (!jailed) {
    log_line("building a jail ahead: " + jailed.error().to_string());
    wanted_.reset();
    return;
  }
  ready_.emplace(Ready{*wanted_, std::move(*jailed)});
}

void JailPool::clear() {
  ready_.reset();
  wanted_.reset();
}

}  // namespace brig::spawner
