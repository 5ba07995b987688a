// The network namespace: a new one has only a loopback device, and it is down.
//
// Making one is ~0.5 ms of kernel work, more than all the jail's other
// namespaces together, so the launcher's clone3 leaves it out: a helper
// process the launcher forks right after (make_in_helper) makes it and
// brings lo up on another CPU, while the jail's child builds the mounts and
// then joins it (join_in_child). The helper runs only this, outside the
// jail's pid namespace, and exits. (A jail built ahead without listeners or
// rules makes it in its child instead: make_in_child.)
//
// The helper also makes the spec's listeners (spec.h, Listener) on the new
// namespace's 127.0.0.1 and sends them to the launcher: sockets bound in the
// jail's namespace, accepted from outside it (the egress relay). Made there
// by the process that already exists, they cost no process of their own.
// For a `filtered` jail it first loads the jail's nftables table (one
// netlink batch the launcher built: netfilter/jail_rules.h; root of the
// jail's user namespace owns the network namespace, so no privilege of the
// host's is used), then sends the launcher the namespace and an rtnetlink
// socket opened in it, with which the launcher gives the jail's end of the
// veth its address and route without ever joining the namespace (filter.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <vector>

#include "jail/base/error.h"
#include "jail/base/setup_step.h"
#include "jail/base/unique_fd.h"
#include "jail/spec.h"
#include "jail/steps/clone.h"

namespace brig::jail::net {

// What the helper needs besides its sockets, planned before the clone.
struct HelperPlan {
  int userns_fd = -1;   // the jail's user namespace to join; -1: none, stay in this one
  int child_sock = -1;  // the namespace, or what failed, goes to the jail's child here
  const Listener* listeners = nullptr;
  std::size_t listener_count = 0;
  int listen_sock = -1;     // the listeners go to the launcher here (when listener_count > 0)
  bool send_netns = false;  // and the namespace and an rtnetlink socket, after them
  // An nf_tables batch to load in the new namespace first (none: size 0).
  const char* rules = nullptr;
  std::size_t rules_size = 0;
};

// The helper: joins the jail's user namespace, makes a network namespace
// there, brings lo up (ioctl SIOCSIFFLAGS; CAP_NET_ADMIN in that user
// namespace), loads `rules`, makes the listeners (CAP_NET_BIND_SERVICE there
// for port 53) and sends them (and with send_netns the namespace and an
// rtnetlink socket of it) on listen_sock, then
// sends the namespace (the fd SIOCGSKNS gives for its socket), or the step
// that failed and its errno, on child_sock; then exits. Async-signal-safe
// (it runs in a raw clone).
[[noreturn]] void make_in_helper(const HelperPlan& plan);

// Launcher side: clones the helper for the jail's child `child` (before its
// go byte: the child is still dumpable, so its user namespace can be
// opened). `in_userns`: the child has a user namespace of its own for the
// helper to join. `sock`: the helper's end of the child's socket;
// `listen_sock`: its end of the launcher's (-1 without listeners or
// send_netns). `rules`: an nf_tables batch for the helper to load (empty:
// none), which must outlive the call. The helper is reaped when the result
// goes. Fails with SetupStep::netns.
Result<clone::Reaped> start_helper(pid_t child, bool in_userns, int sock,
                                   std::span<const Listener> listeners, int listen_sock,
                                   bool send_netns, std::span<const char> rules);

// What the helper sent the launcher.
struct HelperFds {
  std::vector<UniqueFd> listeners;  // in the spec's order, non-blocking, close-on-exec
  UniqueFd netns;                   // with send_netns: the jail's network namespace
  UniqueFd route;                   // and an rtnetlink socket opened in it
};

// Launcher side: what the helper sent on `listen_sock` (it blocks until the
// helper has made them). Fails with SetupStep::netfilter when the rules
// were refused, else SetupStep::listen (the child reports why the helper
// failed before it got this far).
Result<HelperFds> receive_from_helper(int listen_sock, std::span<const Listener> listeners,
                                      bool with_netns);

// Child side, for a jail built ahead without listeners or rules: nothing
// waits for it, so the helper's process (a clone, its exit, the fd passing:
// CPU every such jail paid) is not worth the overlap. The child makes
// the namespace itself (in its own user namespace, as the helper would)
// and brings lo up. Returns 0 or errno; *step: netns or loopback. On
// success *socket is the socket lo was brought up with, which the caller
// owns: an fd that holds the namespace (see send_hold_in_child).
// Async-signal-safe.
int make_in_child(SetupStep* step, int* socket);

// What keeps a jail's namespaces in being after its end: a socket in its
// network namespace, and its mount namespace (an nsfs fd, whose end
// unmounts its whole tree: ~0.3 ms of the exiting init's CPU otherwise).
struct NamespaceHold {
  UniqueFd network;
  UniqueFd mounts;  // empty when the child could not open it (no /proc)
  explicit operator bool() const { return static_cast<bool>(network); }
};

// Child side, after make_in_child: sends `socket` and `mounts` (its own
// mount namespace, or -1) to the launcher over `sync`, one byte with the
// fds, and closes them, for the launcher to hold the namespaces by
// (take_hold). Best effort: a namespace nobody holds is torn down when the
// jail ends, as any other. Async-signal-safe.
void send_hold_in_child(int sync, int socket, int mounts);

// Launcher side: what send_hold_in_child sent on `sync`, if it is there
// already (never blocks); empty otherwise. Read before the command is sent:
// until then only brig's own code has run in the jail.
NamespaceHold take_hold(int sync);

// Child side: waits for make_in_helper's namespace on `sock` and joins it.
// Returns 0 or errno; *step: the step that failed (netns, loopback or listen).
// EPIPE: the helper died first.
int join_in_child(int sock, SetupStep* step);

}  // namespace brig::jail::net
