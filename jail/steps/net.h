// The network namespace: a new one has only a loopback device, and it is down.
#pragma once

namespace brig::jail::net {

// Brings lo up (ioctl SIOCSIFFLAGS; needs CAP_NET_ADMIN in the namespace's
// owning user namespace, which the jail's init has). Async-signal-safe.
// Returns 0 or errno.
int loopback_up_in_child();

}  // namespace brig::jail::net
