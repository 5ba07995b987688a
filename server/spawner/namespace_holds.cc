#include "server/spawner/namespace_holds.h"

#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "jail/base/fd_message.h"
#include "server/spawner/jail_pool.h"

namespace brig::spawner {
namespace {

// A number alone on the first line of a /proc/sys file; nullopt if unreadable.
std::optional<std::uint64_t> read_limit(const char* path) {
  char buf[32];
  if (read_start_of(path, buf, sizeof buf) == 0) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(buf, &end, 10);
  if (end == buf) return std::nullopt;
  return static_cast<std::uint64_t>(v);
}

}  // namespace

std::size_t holds_allowed(std::optional<std::uint64_t> available,
                          std::optional<std::uint64_t> net_limit,
                          std::optional<std::uint64_t> user_limit,
                          std::optional<std::uint64_t> open_files) {
  std::uint64_t allowed = kMaxHeld;
  if (available) allowed = std::min(allowed, *available / kMemoryPerHeld);
  for (const auto& limit : {net_limit, user_limit})
    if (limit) allowed = std::min(allowed, *limit / 8);
  if (open_files) allowed = std::min(allowed, *open_files / 16);  // two fds each
  return static_cast<std::size_t>(allowed);
}

NamespaceHolds::NamespaceHolds(std::size_t cap, std::uint64_t keep_available,
                               MemoryReader available)
    : cap_(cap), keep_available_(keep_available), available_(available) {}

NamespaceHolds::~NamespaceHolds() {
  release_all();
  reap_closers(/*wait=*/true);
}

NamespaceHolds NamespaceHolds::for_this_host() {
  std::optional<std::uint64_t> open_files;
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    open_files = files.rlim_cur;
  const std::size_t cap =
      holds_allowed(memory_available(), read_limit("/proc/sys/user/max_net_namespaces"),
                    read_limit("/proc/sys/user/max_user_namespaces"), open_files);
  const std::optional<std::uint64_t> total = meminfo_bytes("MemTotal:");
  return NamespaceHolds(cap, total ? *total / kKeepAvailableOneIn : 0, memory_available);
}

void NamespaceHolds::keep(jail::net::NamespaceHold hold) {
  if (!hold || cap_ == 0) return;  // closed as it goes out of scope
  if (count_ >= cap_ || memory_low()) release_all();
  if (!park(hold)) {
    // A full park (its send buffer) is let go and tried once more; failing
    // again, the hold is closed here, as an unheld jail's would be.
    release_all();
    if (!park(hold)) return;
  }
  ++count_;
}

bool NamespaceHolds::park(const jail::net::NamespaceHold& hold) {
  if (!park_in_) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0)
      return false;
    park_in_.reset(pair[0]);
    park_out_.reset(pair[1]);
    // Each hold is a small message of its own (~1 KiB of the buffer); the
    // kernel caps this at net.core.wmem_max (208 KiB, doubled, by default).
    const int bytes = 1 << 20;
    ::setsockopt(park_in_.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
  const int fds[2] = {hold.network.get(), hold.mounts.get()};
  const char byte = 'h';
  return send_with_fds(park_in_.get(), &byte, 1, fds, hold.mounts ? 2 : 1) == 0;
}

bool NamespaceHolds::memory_low() {
  if (keep_available_ == 0 || available_ == nullptr) return false;
  const Clock::time_point now = Clock::now();
  if (memory_read_at_ && now - *memory_read_at_ < kMemoryCheckEvery) return false;
  memory_read_at_ = now;
  const std::optional<std::uint64_t> available = available_();
  return available && *available < keep_available_;
}

void NamespaceHolds::release_all() {
  reap_closers(/*wait=*/false);
  if (count_ == 0) return;
  count_ = 0;
  // The closer may close its copies only once this process has closed its
  // own: whoever closes a namespace's last fd does its teardown.
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) {
    close_park();  // torn down here, then
    return;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    char byte;
    while (::read(go[0], &byte, 1) < 0 && errno == EINTR) {
    }
    // Every fd this copy of brig-spawner has: the park's last references
    // (closing its queue's end closes every fd waiting in it), and copies of
    // what brig-spawner still uses (it keeps its own).
    ::syscall(SYS_close_range, 0U, ~0U, 0U);
    ::_exit(0);
  }
  UniqueFd closer(pid > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)) : -1);
  close_park();
  ::close(go[1]);
  ::close(go[0]);
  if (pid > 0 && !closer) {
    // No pidfd (a kernel before 5.3 has no pidfd_open): reaped here.
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (closer) closers_.push_back(std::move(closer));
}

void NamespaceHolds::close_park() {
  park_in_.reset();
  park_out_.reset();
}

void NamespaceHolds::reap_closers(bool wait) {
  std::erase_if(closers_, [wait](const UniqueFd& pidfd) {
    siginfo_t info{};
    for (;;) {
      if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd.get()), &info,
                   WEXITED | (wait ? 0 : WNOHANG)) == 0)
        return info.si_pid != 0;        // WNOHANG: 0 while it runs
      if (errno != EINTR) return true;  // ECHILD: nothing left to reap
    }
  });
}

}  // namespace brig::spawner
