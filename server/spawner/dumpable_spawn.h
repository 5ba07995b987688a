// Cloning a jail from an unprivileged spawner: the clone inherits this
// process's dumpable flag, and a non-dumpable child's /proc files belong to
// root, so an unprivileged spawner could not write its jail's uid_map. The
// flag is up only while the jail is cloned (the jail's init clears its own
// right after its maps are written); root opens them either way.
#pragma once

#include <sys/prctl.h>
#include <unistd.h>

namespace brig::spawner {

// Calls `spawn()` (jail::spawn or jail::spawn_awaiting) with this process
// dumpable meanwhile when it is not root, and returns what it returned.
template <class Spawn>
auto spawn_dumpable(Spawn&& spawn) {
  const bool toggle = ::geteuid() != 0;
  if (toggle) ::prctl(PR_SET_DUMPABLE, 1);
  auto jailed = spawn();
  if (toggle) ::prctl(PR_SET_DUMPABLE, 0);
  return jailed;
}

}  // namespace brig::spawner
