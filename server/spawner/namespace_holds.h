// NamespaceHolds: the network and mount namespaces of jails that ended during
// a burst of calls, each kept in being by the fds its child sent
// (RunningJail::take_namespace_hold) until brig-spawner is idle. Tearing
// them down is kernel work that otherwise lands right after each jail's
// end, on the CPUs the next calls of a burst need: a kworker unregisters
// the network namespace's lo and its sysctl tables (~0.6-0.8 ms), and the
// exiting init unmounts the mount namespace's tree and ends its tmpfs, proc
// and devpts superblocks (~0.3 ms). Held, it is done once the burst is
// over, for all of them at once, by a short-lived process of its own (a
// mount namespace's end is synchronous in whoever closes its last fd), so
// brig-spawner never waits for it. The work is the same, only later.
// Nothing can enter a held namespace: no process is left in it, and its
// fds wait unread in a socket of this process's own (close-on-exec, and
// every jail's child closes what it does not need before any of its steps).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "jail/base/unique_fd.h"
#include "jail/steps/net.h"

namespace brig::spawner {

// At most this many jails' namespaces are held (~150 KiB of kernel memory
// for a network namespace here, a 6.18 kernel, lo with IPv4 and IPv6; a
// mount namespace with its empty tmpfs superblocks some more, too little
// to measure apart from MemAvailable's own noise).
inline constexpr std::size_t kMaxHeld = 256;
// One is held per this much available memory (MemAvailable).
inline constexpr std::uint64_t kMemoryPerHeld = 10ull << 20;
// A held mount namespace keeps whatever its jail left in its tmpfs mounts
// (/tmp, the home, /dev/shm): all are let go as soon as MemAvailable falls
// under this fraction of MemTotal, read again at most this often (what the
// jails of one such interval can write is what bounds the excess).
inline constexpr std::uint64_t kKeepAvailableOneIn = 8;
inline constexpr std::chrono::milliseconds kMemoryCheckEvery{25};

// How many may be held with `available` bytes free, the user's limits on
// namespaces (`net_limit`, `user_limit`: /proc/sys/user/max_net_namespaces
// and max_user_namespaces; a held namespace also keeps its jail's user
// namespace) and the spawner's own `open_files` (RLIMIT_NOFILE, soft: each
// hold is two fds in flight, which the kernel counts against the user's
// limit as it sends more). An eighth of each limit at most, so that holding
// never makes a new jail fail for want of a namespace or an fd. Unknown
// values do not limit.
std::size_t holds_allowed(std::optional<std::uint64_t> available,
                          std::optional<std::uint64_t> net_limit,
                          std::optional<std::uint64_t> user_limit,
                          std::optional<std::uint64_t> open_files);

class NamespaceHolds {
 public:
  using Clock = std::chrono::steady_clock;
  // Reads MemAvailable (bytes; nullopt: unknown).
  using MemoryReader = std::optional<std::uint64_t> (*)();

  // `cap`: at most this many held (0: none, every hold is closed at once).
  // `keep_available`: let all go when `available` reads less (0: never).
  explicit NamespaceHolds(std::size_t cap, std::uint64_t keep_available = 0,
                          MemoryReader available = nullptr);
  // Lets all go and waits for the processes that tear them down.
  ~NamespaceHolds();
  NamespaceHolds(const NamespaceHolds&) = delete;
  NamespaceHolds& operator=(const NamespaceHolds&) = delete;

  // The cap and the memory floor for this host now (holds_allowed over
  // /proc; MemTotal / kKeepAvailableOneIn).
  static NamespaceHolds for_this_host();

  // Keeps `hold` (an empty one is ignored). At the cap, or with memory under
  // the floor, all those held are let go first.
  void keep(jail::net::NamespaceHold hold);
  // Lets every one held go: a new process closes the last fds and so does
  // the teardown, while this one goes on.
  void release_all();
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

 private:
  bool memory_low();
  // Sends the hold's fds into the park; false if they could not go.
  bool park(const jail::net::NamespaceHold& hold);
  void close_park();
  void reap_closers(bool wait);

  std::size_t cap_;
  std::uint64_t keep_available_;
  MemoryReader available_;
  std::optional<Clock::time_point> memory_read_at_;
  std::size_t count_ = 0;
  // The park: a socket pair whose one end's queue holds every hold's fds,
  // sent with one byte each and never read. Kept there, not in this
  // process's fd table, they are not copied into every jail cloned from it
  // (and closed again by its child): ~0.15 ms a call at 200 holds.
  UniqueFd park_in_, park_out_;
  std::vector<UniqueFd> closers_;  // pidfds of the processes still tearing down
};

}  // namespace brig::spawner
