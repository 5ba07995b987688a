// The network namespace: a new one has only a loopback device, and it is down.
//
// Making one is ~0.5 ms of kernel work, more than all the jail's other
// namespaces together, so the launcher's clone3 leaves it out: a helper
// process the launcher forks right after (make_in_helper) makes it and
// brings lo up on another CPU, while the jail's child builds the mounts and
// then joins it (join_in_child). The helper runs only this, outside the
// jail's pid namespace, and exits.
#pragma once

#include <sys/types.h>

#include "jail/base/error.h"
#include "jail/steps/clone.h"

namespace brig::jail::net {

// The helper: joins the jail's user namespace (`userns_fd`; -1: none, stay
// in this one), makes a network namespace there, brings lo up (ioctl
// SIOCSIFFLAGS; CAP_NET_ADMIN in that user namespace) and sends the
// namespace (the fd SIOCGSKNS gives for its socket), or what failed, on
// `sock`; then exits. Async-signal-safe (it runs in a raw clone).
[[noreturn]] void make_in_helper(int userns_fd, int sock);

// Launcher side: clones the helper for the jail's child `child` (before its
// go byte: the child is still dumpable, so its user namespace can be
// opened). `in_userns`: the child has a user namespace of its own for the
// helper to join. `sock`: the helper's end of the child's socket. The
// helper is reaped when the result goes. Fails with SetupStep::netns.
Result<clone::Reaped> start_helper(pid_t child, bool in_userns, int sock);

// Child side: waits for make_in_helper's namespace on `sock` and joins it.
// Returns 0 or errno; *in_loopback tells whether bringing lo up failed (else
// making or joining the namespace did). EPIPE: the helper died first.
int join_in_child(int sock, bool* in_loopback);

}  // namespace brig::jail::net
