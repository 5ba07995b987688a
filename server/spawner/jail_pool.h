// JailPool: the spawner's jails built ahead (DESIGN.md: "a pool of
// pre-forked, fully set-up jails waiting for their command, so a call pays
// for execve, not for namespace setup"), for the spec of the last SPAWN: a
// server plans every exec from one policy, so the next SPAWN almost always
// wants the same jail.
//
// - A pooled jail is built by jail::spawn_awaiting: every step a fresh jail
//   takes, up to its command; what confines the command (ids, cgroups,
//   rlimits, caps, no_new_privs, Landlock, seccomp) still comes after the
//   command arrived. It serves one command, never a second: take() moves it
//   out of the pool.
// - It serves only a SPAWN whose spec is equal to the one it was built from,
//   the wall time aside (an exec's timeout; the deadline starts with the
//   command). A SPAWN for another spec drops them all.
// - It is checked before use: one whose init reported (a setup failure) or
//   exited is dropped, and the next one (or a fresh jail, which reports
//   why) serves; so is one built from a host that has changed since
//   (jail::built_from_current_host: a bind source replaced, a symlink
//   retargeted), which would show the jail the old files. The plan of the
//   last one found unchanged serves the next builds for its spec
//   (jail::VerifiedPlan): the same spec and answers give the same plan.
// - How many wait is sized by recent demand (target()): one, as long as
//   each SPAWN finds a jail ready; one more (up to kMaxAhead) each time a
//   SPAWN comes back to back with the last one and finds none; back to one
//   once no SPAWN came for kShrinkAfterIdle, the extra jails dropped. Never
//   more than memory allows (ahead_for_memory()).
// - Refilled only after a SPAWN asked for that spec, so a spec that cannot be
//   built costs one failed build per SPAWN, never a loop. SpawnerLoop decides
//   when: once idle a while, or at once while calls come back to back
//   (refill_now()), so a burst keeps finding one (waiting for a running
//   command's end while a jail is still ready, unless each call came on the
//   last one's result: SpawnerLoop::build_now()).
// - Dropped (killed, reaped, its cgroups removed) when the spawner ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "jail/launcher.h"
#include "jail/spec.h"

namespace brig::spawner {

// At most this many jails wait at once.
inline constexpr std::size_t kMaxAhead = 4;
// One jail waits per this much available memory (MemAvailable), at least one:
// a waiting jail holds a few MiB (its init, namespaces, page tables), so this
// keeps a full pool to a small share of what the host has free.
inline constexpr std::uint64_t kMemoryPerJailAhead = 256ull << 20;
// A SPAWN this soon after the last one is back to back.
inline constexpr std::chrono::milliseconds kBackToBack{250};
// MemAvailable is read again after this long: /proc/meminfo is formatted
// afresh on each read (~15 us), and each call back to back refills.
inline constexpr std::chrono::milliseconds kMemoryReadEvery{100};
// With no SPAWN for this long, one jail waits again.
inline constexpr std::chrono::seconds kShrinkAfterIdle{10};

// How many jails may wait with `available` bytes of memory free: between 1
// and kMaxAhead. Unknown (nullopt): 1.
std::size_t ahead_for_memory(std::optional<std::uint64_t> available);
// A field of /proc/meminfo given in kB ("MemTotal:"), in bytes; nullopt if
// unreadable.
std::optional<std::uint64_t> meminfo_bytes(const char* field);
// MemAvailable from /proc/meminfo, in bytes; nullopt if unreadable.
std::optional<std::uint64_t> memory_available();
// The start of a small file (/proc), NUL-terminated in `buf`: its length,
// 0 if unreadable or empty. read(2), not a stream: the spawner keeps to
// system calls (no locale, no stdio buffers).
std::size_t read_start_of(const char* path, char* buf, std::size_t size);

class JailPool {
 public:
  using Clock = std::chrono::steady_clock;

  // A pooled jail for `spec`, given `request` as its command (its deadline
  // `spec`'s wall time from now), or nullopt: none ready for that spec (the
  // caller spawns a fresh one). Either way the pool is to be refilled for
  // `spec` afterwards.
  std::optional<jail::RunningJail> take(const jail::JailSpec& spec,
                                        const jail::ExecRequest& request,
                                        Clock::time_point now = Clock::now());

  // Whether a jail built for `spec` waits first in line (take() may still
  // find it gone, or its host changed).
  bool has_ready_for(const jail::JailSpec& spec);
  // Whether a refill is due: a spec was asked for and fewer jails wait for
  // it than target().
  bool wants_refill() const { return wanted_ != nullptr && ready_.size() < target_; }
  // Whether to build without waiting for the spawner to be idle: calls come
  // back to back (target() > 1), so the spawner is never idle between them.
  // A call that comes during the build takes a jail still ready, or waits
  // for the build and takes the jail it made: what is left of one build,
  // less than a fresh jail of its own would take (issue 16: a burst
  // that emptied the pool used to wait for an idle moment it never had, and
  // every later call of it built its own jail).
  bool refill_now() const { return wants_refill() && target_ > 1; }
  // Builds one jail for the spec last asked for (`options`: how the
  // launcher waits, SpawnOptions::wait_readable). A failure leaves the pool
  // as it is until the next SPAWN asks again.
  void refill(const jail::SpawnOptions& options = {});
  // Back to one jail once no SPAWN came for kShrinkAfterIdle; when that is
  // due, for the loop's poll timeout (nullopt: nothing to shrink).
  void shrink_if_idle(Clock::time_point now);
  std::optional<Clock::time_point> shrink_due() const;

  // How many jails are to wait: 1..kMaxAhead, as demand asked and memory
  // allows.
  std::size_t target() const { return target_; }
  std::size_t ready() const { return ready_.size(); }

  // Kills the waiting jails and forgets the spec.
  void clear();

 private:
  // A spec with its wall time reset (key_of), shared by the jails built for
  // it.
  using Key = std::shared_ptr<const jail::JailSpec>;
  struct Ready {
    Key key;
    jail::RunningJail jailed;
  };
  // memory_available(), read at most every kMemoryReadEvery.
  std::optional<std::uint64_t> memory(Clock::time_point now);
  // `spec` with what may differ between calls of one policy reset.
  static jail::JailSpec key_of(jail::JailSpec spec);
  static bool same(const Key& a, const Key& b);
  // The key of `spec`: the last one made while `spec` is the last asked.
  Key key_for(const jail::JailSpec& spec);
  // Its init has neither reported nor exited: it still waits.
  static bool still_waiting(const jail::RunningJail& jailed);

  std::deque<Ready> ready_;  // oldest first; each serves once
  Key wanted_;               // the key to build the next ones for; null: none
  std::size_t target_ = 1;
  std::optional<Clock::time_point> last_take_;
  std::optional<jail::JailSpec> asked_;  // the last spec asked, its wall time too
  Key last_key_;                         // its key
  std::optional<std::uint64_t> memory_;  // memory(): the last MemAvailable read, and when
  std::optional<Clock::time_point> memory_read_at_;
  // The plan of the last jail taken, found unchanged then: the next builds
  // for its spec take it instead of planning again (a jail built from it
  // is checked before use as any other; a change found drops it).
  std::shared_ptr<const jail::VerifiedPlan> verified_;
};

}  // namespace brig::spawner
