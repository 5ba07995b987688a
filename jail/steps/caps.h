// Capabilities: the jail's process keeps none. Inside a new user namespace the
// child starts with every capability of that namespace (that is how it could
// mount and pivot_root); before execve it drops the effective, permitted and
// inheritable sets, the ambient set and the bounding set, and locks the
// securebits so that uid 0 regains nothing across execve.
//
// libcap allocates, so it is used only in prepare() (to learn the kernel's
// highest capability and the caller's own capabilities); the child drops them
// with raw prctl/capset syscalls.
#pragma once

#include <string>
#include <vector>

#include "jail/base/error.h"
#include "jail/spec.h"

namespace brig::jail::caps {

// The drop, planned before clone.
struct Prepared {
  int last_cap = 0;  // highest capability number this kernel knows (cap_last_cap)
  // Whether the child will hold CAP_SETPCAP, which dropping the bounding set
  // and setting securebits need: always inside a new user namespace; outside
  // one, only when the caller itself has it (root). Without it, the bounding
  // set is left as it is; no_new_privs keeps execve from using it.
  bool can_setpcap = true;
  // What could not be dropped, one sentence each; empty = everything is.
  std::vector<std::string> unenforced;
};

// Plans the drop for a jail created with `namespaces`. Fails only when the
// kernel's capability range or the caller's own capabilities cannot be read.
Result<Prepared> prepare(const Namespaces& namespaces);

// Drops every capability: securebits locked (no root fixups, no ambient
// raise), bounding set emptied (when can_setpcap), ambient set cleared, then
// effective, permitted and inheritable cleared. Runs in the jail's child just
// before no_new_privs, Landlock and seccomp. Async-signal-safe. Returns 0 or
// the errno of the first call that failed.
int apply_in_child(const Prepared& prepared);

// Sets PR_SET_NO_NEW_PRIVS: execve can no longer raise privileges (setuid
// bits, file capabilities), and seccomp and Landlock may then be installed
// without CAP_SYS_ADMIN. Async-signal-safe. Returns 0 or errno.
int set_no_new_privs_in_child();

}  // namespace brig::jail::caps
