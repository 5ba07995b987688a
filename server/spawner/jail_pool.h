// JailPool: the spawner's jail built ahead (DESIGN.md: "a pool of
// pre-forked, fully set-up jails waiting for their command, so a call pays
// for execve, not for namespace setup"). One jail, for the spec of the last
// SPAWN: a server plans every exec from one policy, so the next SPAWN almost
// always wants the same jail.
//
// - A pooled jail is built by jail::spawn_awaiting: every step a fresh jail
//   takes, up to its command; what confines the command (ids, cgroups,
//   rlimits, caps, no_new_privs, Landlock, seccomp) still comes after the
//   command arrived. It serves one command, never a second.
// - It serves only a SPAWN whose spec is equal to the one it was built from,
//   the wall time aside (an exec's timeout; the deadline starts with the
//   command). A SPAWN for another spec drops it.
// - It is checked before use: one whose init reported (a setup failure) or
//   exited is dropped, and the SPAWN gets a fresh jail, which reports why;
//   so is one built from a host that has changed since
//   (jail::built_from_current_host: a bind source replaced, a symlink
//   retargeted), which would show the jail the old files.
// - Refilled only after a SPAWN asked for that spec, so a spec that cannot be
//   built costs one failed build per SPAWN, never a loop; and only once the
//   spawner has been idle a while (SpawnerLoop decides when): calls sent
//   back to back get fresh jails, as without a pool, not one still building.
// - Dropped (killed, reaped, its cgroups removed) when the spawner ends.
#pragma once

#include <chrono>
#include <optional>

#include "jail/launcher.h"
#include "jail/spec.h"

namespace brig::spawner {

class JailPool {
 public:
  // The pooled jail for `spec`, given `request` as its command (its deadline
  // `spec`'s wall time from now), or nullopt: none ready for that spec (the
  // caller spawns a fresh one). Either way the pool is to be refilled for
  // `spec` afterwards.
  std::optional<jail::RunningJail> take(const jail::JailSpec& spec,
                                        const jail::ExecRequest& request);

  // Whether a refill is due: a spec was asked for and no jail waits for it.
  bool wants_refill() const { return wanted_.has_value() && !ready_; }
  // Builds the jail for the spec last asked for. A failure leaves the pool
  // empty until the next SPAWN asks again.
  void refill();

  // Kills the waiting jail, if any, and forgets the spec.
  void clear();

 private:
  struct Ready {
    jail::JailSpec key;
    jail::RunningJail jailed;
  };
  // `spec` with what may differ between calls of one policy reset.
  static jail::JailSpec key_of(jail::JailSpec spec);
  // Its init has neither reported nor exited: it still waits.
  static bool still_waiting(const jail::RunningJail& jailed);

  std::optional<Ready> ready_;
  std::optional<jail::JailSpec> wanted_;  // the key to build the next one for
};

}  // namespace brig::spawner
