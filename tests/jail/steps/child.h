// Forked-child helpers for the kernel tests of the confinement steps: a layer
// is applied to a throwaway child, never to the test process, and each probe
// (one syscall-like attempt) runs in its own grandchild so that what one
// attempt changes (a namespace, a chroot, a kill) cannot affect the next.
#pragma once

#include <climits>
#include <functional>
#include <span>
#include <string>

namespace brig::jail::testing {

// How one attempt ended: 0 = it succeeded, > 0 = it failed with that errno,
// < 0 = its process was killed by signal -outcome.
using Outcome = int;
inline constexpr Outcome kSucceeds = 0;
// In a Probe, "don't compare": for controls whose result depends on the kernel.
inline constexpr Outcome kAnyOutcome = INT_MIN;
constexpr Outcome killed_by(int signal) {
  return -signal;
}

// "succeeds", "EPERM (Operation not permitted)", "killed by signal 31".
std::string describe(Outcome outcome);

// Runs `call` in a forked process. `call` returns like a syscall: >= 0 for
// success, -1 with errno set for failure.
Outcome attempt(const std::function<long()>& call);

// Runs `body` in a forked child (core dumps off, a 120 s alarm) and returns
// what it returned, or what went wrong with the child. "" = success.
std::string run_in_child(const std::function<std::string()>& body);

// One attempt and what it should give with the layer under test and without
// it (the positive control: the same attempt must work when only that layer
// is missing, so a refusal is the layer's doing).
struct Probe {
  std::string name;
  std::function<long()> call;
  Outcome with_layer;
  Outcome without_layer;
};

// In a forked child: runs `setup` (returns "" or what failed), then
// `apply_layer` when given (returns 0 or an errno), then every probe. Returns
// one line per probe whose outcome differs from what it expects; "" = all as
// expected.
std::string run_probes(std::span<const Probe> probes, const std::function<std::string()>& setup,
                       const std::function<int()>& apply_layer);

// Enters a new user namespace (plus `extra_flags` namespaces) and maps the
// caller's uid and gid to 0 inside, so the child holds every capability there
// and owns its files. Returns "" or what failed.
std::string become_root_in_new_user_namespace(int extra_flags);

// Wraps a call that returns 0 or a positive error number (pthread style).
long from_error_number(int err);

// posix_spawns /bin/true with an empty environment and waits for it: 0 when
// it ran and exited 0, else -1 with errno (ECHILD: it did not exit 0).
long spawn_true();

}  // namespace brig::jail::testing
