// User namespace maps, written by the parent after clone while the child
// waits for its go byte: a process cannot map itself (the kernel requires the
// writer to hold capabilities over the parent namespace, or to map only its
// own id with setgroups denied, which is what unprivileged brig does).
#pragma once

#include <sys/types.h>

#include "jail/base/error.h"
#include "jail/spec.h"

namespace brig::jail::userns {

// Writes /proc/<pid>/setgroups, uid_map and gid_map, each mapping one id:
// identity.inside_* -> identity.outside_*. setgroups is "deny" unless
// `allow_setgroups` (only a privileged caller may; the child then drops its
// supplementary groups itself, see contain.cc); a privileged caller whose
// own ids are not the outside ids also maps them to themselves, for the
// init, unless identity.map_launcher is false. Fails with the file and errno
// (EPERM: the caller may not map that outside id).
Result<void> write_maps_from_parent(pid_t pid, const Identity& identity, bool allow_setgroups);

}  // namespace brig::jail::userns
