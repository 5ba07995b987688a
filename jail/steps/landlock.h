// Landlock: the jail's unprivileged, stackable access control. The ruleset is
// planned before clone (ABI probe, rights per path and port, as plain arrays)
// and applied in the child after the mounts, since its paths are the jail's
// own: they are opened after pivot_root. Landlock only ever grants: a right
// the ruleset handles is denied everywhere no rule grants it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "jail/layer_report.h"
#include "jail/spec.h"
#include "jail/steps/landlock_abi.h"

namespace brig::jail::landlock {

// The Landlock ABI of the running kernel, capped at the newest ABI brig knows
// (landlock_abi::kNewestKnownAbi). 0 = Landlock is not built in or is disabled
// at boot (lsm= without landlock).
int probe_abi();

// One path and the filesystem rights granted beneath it. `access` holds the
// rights for a directory; apply_in_child keeps only the file rights when the
// path turns out to be a file.
struct PathGrant {
  std::string path;
  uint64_t access = 0;
  friend bool operator==(const PathGrant&, const PathGrant&) = default;
};

// One jail's Landlock layer, ready for apply_in_child.
struct Prepared {
  int abi = 0;                     // the ABI planned for; 0 = apply_in_child does nothing
  landlock_abi::RulesetAttr attr;  // handled rights and scopes: denied unless granted
  std::vector<PathGrant> paths;    // in order: read_only, read_write, then list_only entries
  std::vector<landlock_abi::NetPortAttr> ports;  // TCP ports granted (ABI >= 4)
  // What the rules ask for that this kernel cannot enforce, one sentence each
  // ("landlock: TCP rules need ABI 4, this kernel has 3"); empty = everything
  // asked for is enforced. The policy's `require` decides whether that is fatal.
  std::vector<std::string> unenforced;
};

// Plans `rules` for the given ABI (0..7, higher is capped at 7). Pure: no
// syscalls, for tests and `brig doctor`. Fails on a relative or empty path.
// Disabled rules give an empty Prepared; ABI 0 gives abi = 0 and says so in
// `unenforced`.
Result<Prepared> plan(const LandlockRules& rules, int abi);

// The Landlock layer of a jail with namespaces, as `prepared` enforces
// `rules`: off when disabled, degraded without Landlock (ABI 0), else
// enforced — the filesystem rules are Landlock's part there, since the
// network and pid namespaces already bound TCP, abstract sockets and signals
// — with what an older ABI lacks in the detail. The launcher reports it and
// `brig doctor` predicts it from the same function.
LayerStatus layer_status(const LandlockRules& rules, const Prepared& prepared);

// plan() at the running kernel's ABI (probe_abi()). Runs before clone.
Result<Prepared> prepare(const LandlockRules& rules);

// Builds the ruleset and restricts the calling process. Runs in the jail's
// child after pivot_root and after PR_SET_NO_NEW_PRIVS, before seccomp.
// Async-signal-safe (raw syscalls only, no allocation). A path that does not
// exist in the jail is skipped: a rule on it could only have granted access.
// Returns 0, or the errno of the first call that failed.
int apply_in_child(const Prepared& prepared);

}  // namespace brig::jail::landlock
