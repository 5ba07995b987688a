// Process creation for the jail. glibc 2.36 has no clone3() wrapper, and
// after a raw clone the child's cached thread id is stale, so the child may
// use only async-signal-safe calls; raw_fork() lets the jail's init fork the
// command without glibc's fork bookkeeping for the same reason.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "jail/spec.h"

namespace brig::jail::clone {

// The CLONE_NEW* flags for `namespaces` (net only when `new_net`).
uint64_t namespace_flags(const Namespaces& namespaces, bool new_net);

// clone3 with CLONE_PIDFD | `flags`, exit signal SIGCHLD, no CLONE_VFORK (the
// parent must write the uid/gid maps while the child waits). Like fork():
// returns the child's pid in the parent (and sets *pidfd), 0 in the child,
// -1 with errno on failure.
pid_t clone3_with_pidfd(uint64_t flags, int* pidfd);

// fork() as a bare clone syscall: 0 in the child, the pid in the parent, -1
// with errno. Async-signal-safe.
pid_t raw_fork();

}  // namespace brig::jail::clone
