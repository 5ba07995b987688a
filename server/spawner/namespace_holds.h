// NamespaceHolds: the network namespaces of jails that ended during a burst
// of calls, each kept in being by one socket in it (RunningJail::
// take_network_hold) until brig-spawner is idle. Tearing a network namespace
// down is ~0.6-0.8 ms of kernel work (unregistering its lo, its sysctl
// tables, RCU callbacks) that a kworker does right after the jail's end, on
// the CPUs the next calls of a burst need; held, it is done once the burst
// is over, for all of them at once. The work is the same, only later: a
// stream of calls longer than the cap pays it as it goes, oldest first.
// Nothing can enter a held namespace: no process is left in it, and the
// sockets are this process's alone (close-on-exec, and every jail's child
// closes what it does not need before any of its steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "jail/base/unique_fd.h"

namespace brig::spawner {

// At most this many are held (~150 KiB of kernel memory each here: a 6.18
// kernel, lo with IPv4 and IPv6).
inline constexpr std::size_t kMaxHeld = 256;
// One is held per this much available memory (MemAvailable): the held
// namespaces stay under a sixty-fourth of what the host has free.
inline constexpr std::uint64_t kMemoryPerHeld = 10ull << 20;

// How many may be held with `available` bytes free, the user's limits on
// namespaces (`net_limit`, `user_limit`: /proc/sys/user/max_net_namespaces
// and max_user_namespaces; a held namespace also keeps its jail's user
// namespace) and the spawner's own `open_files` (RLIMIT_NOFILE, soft: each
// hold is an fd, and every jail the spawner runs needs a few). An eighth of
// each limit at most, so that holding never makes a new jail fail for want
// of a namespace or an fd. Unknown values do not limit.
std::size_t holds_allowed(std::optional<std::uint64_t> available,
                          std::optional<std::uint64_t> net_limit,
                          std::optional<std::uint64_t> user_limit,
                          std::optional<std::uint64_t> open_files);

class NamespaceHolds {
 public:
  // `cap`: at most this many held (0: none, every hold is closed at once).
  explicit NamespaceHolds(std::size_t cap);
  // The cap for this host now (holds_allowed over /proc).
  static std::size_t cap_for_this_host();

  // Keeps `hold` (an empty fd is ignored); past the cap the oldest held is
  // closed first.
  void keep(UniqueFd hold);
  // Closes every one held: their namespaces are torn down together.
  void release_all() { held_.clear(); }
  std::size_t size() const { return held_.size(); }
  bool empty() const { return held_.empty(); }

 private:
  std::size_t cap_;
  std::deque<UniqueFd> held_;
};

}  // namespace brig::spawner
