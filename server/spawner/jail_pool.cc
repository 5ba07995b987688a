#include "server/spawner/jail_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "server/spawner/dumpable_spawn.h"
#include "server/spawner/spawner_loop.h"

namespace brig::spawner {

std::size_t ahead_for_memory(std::optional<std::uint64_t> available) {
  if (!available) return 1;
  return static_cast<std::size_t>(
      std::clamp<std::uint64_t>(*available / kMemoryPerJailAhead, 1, kMaxAhead));
}

std::size_t read_start_of(const char* path, char* buf, std::size_t size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = ::read(fd, buf, size - 1);
  ::close(fd);
  buf[n > 0 ? n : 0] = '\0';
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

std::optional<std::uint64_t> meminfo_bytes(const char* field) {
  // MemTotal and MemAvailable are in the first few hundred bytes.
  char buf[1024];
  if (read_start_of("/proc/meminfo", buf, sizeof buf) == 0) return std::nullopt;
  const char* at = std::strstr(buf, field);
  if (!at) return std::nullopt;
  char* end = nullptr;
  const unsigned long long kib = std::strtoull(at + std::strlen(field), &end, 10);
  if (end == at + std::strlen(field)) return std::nullopt;
  return static_cast<std::uint64_t>(kib) * 1024;
}

std::optional<std::uint64_t> memory_available() {
  return meminfo_bytes("MemAvailable:");
}

jail::JailSpec JailPool::key_of(jail::JailSpec spec) {
  spec.limits.wall_time.reset();
  return spec;
}

bool JailPool::same(const Key& a, const Key& b) {
  return a == b || (a && b && *a == *b);
}

JailPool::Key JailPool::key_for(const jail::JailSpec& spec) {
  // A server asks the same spec for every call of one policy and timeout:
  // one comparison, no copy, until it asks another.
  if (!asked_ || *asked_ != spec) {
    asked_ = spec;
    jail::JailSpec key = key_of(spec);
    if (!last_key_ || *last_key_ != key)
      last_key_ = std::make_shared<const jail::JailSpec>(std::move(key));
  }
  return last_key_;
}

bool JailPool::has_ready_for(const jail::JailSpec& spec) {
  return !ready_.empty() && same(ready_.front().key, key_for(spec));
}

bool JailPool::still_waiting(const jail::RunningJail& jailed) {
  pollfd fds[2] = {{jailed.status_fd(), POLLIN, 0}, {jailed.pidfd(), POLLIN, 0}};
  return ::poll(fds, 2, 0) == 0;
}

std::optional<jail::RunningJail> JailPool::take(const jail::JailSpec& spec,
                                                const jail::ExecRequest& request,
                                                Clock::time_point now) {
  const bool back_to_back = last_take_ && now - *last_take_ <= kBackToBack;
  last_take_ = now;
  const Key key = key_for(spec);
  if (!ready_.empty() && !same(ready_.front().key, key)) ready_.clear();
  std::optional<jail::RunningJail> out;
  while (!ready_.empty() && !out) {
    Ready& front = ready_.front();
    if (!still_waiting(front.jailed)) {
      ready_.pop_front();
      continue;
    }
    if (!jail::built_from_current_host(front.jailed, *key)) {
      verified_.reset();  // the host changed: the next build plans again
      ready_.pop_front();
      continue;
    }
    verified_ = jail::verified_plan(front.jailed);
    if (auto started = jail::start_command(front.jailed, request, spec.limits.wall_time)) {
      out = std::move(front.jailed);
      ready_.pop_front();  // used once: it leaves the pool with its command
    } else if (!front.jailed.awaiting()) {
      ready_.pop_front();  // gone meanwhile; the next one, or a fresh jail, serves
    } else {
      // The request is one it cannot take (too large, invalid): it keeps
      // waiting, and a fresh jail serves or refuses the request.
      break;
    }
  }
  // Calls faster than the pool refills: keep one more ready for them.
  if (!out && back_to_back) target_ = std::min(target_ + 1, ahead_for_memory(memory(now)));
  wanted_ = key;
  return out;
}

void JailPool::refill(const jail::SpawnOptions& options) {
  if (!wants_refill()) return;
  // Memory may have become scarce since the target was set.
  target_ = std::min(target_, ahead_for_memory(memory(Clock::now())));
  while (ready_.size() > target_) ready_.pop_back();
  if (ready_.size() >= target_) return;
  // Held apart: a SPAWN served from the pool while this one is built
  // (SpawnOptions::wait_readable) sets wanted_ again.
  const Key building = wanted_;
  jail::SpawnOptions with_plan = options;
  with_plan.verified = verified_;
  auto jailed = spawn_dumpable([&] { return jail::spawn_awaiting(*building, with_plan); });
  if (!jailed) {
    log_line("building a jail ahead: " + jailed.error().to_string());
    wanted_.reset();
    verified_.reset();
    return;
  }
  if (!same(wanted_, building)) return;  // another spec was asked for meanwhile: dropped
  ready_.push_back(Ready{building, std::move(*jailed)});
}

std::optional<std::uint64_t> JailPool::memory(Clock::time_point now) {
  if (!memory_read_at_ || now - *memory_read_at_ >= kMemoryReadEvery) {
    memory_ = memory_available();
    memory_read_at_ = now;
  }
  return memory_;
}

std::optional<JailPool::Clock::time_point> JailPool::shrink_due() const {
  if (target_ <= 1 || !last_take_) return std::nullopt;
  return *last_take_ + kShrinkAfterIdle;
}

void JailPool::shrink_if_idle(Clock::time_point now) {
  const auto due = shrink_due();
  if (!due || now < *due) return;
  target_ = 1;
  while (ready_.size() > 1) ready_.pop_back();  // the oldest stays, for the next call
}

void JailPool::clear() {
  ready_.clear();
  wanted_.reset();
  asked_.reset();
  last_key_.reset();
  verified_.reset();
}

}  // namespace brig::spawner
