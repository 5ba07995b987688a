// What a planned jail can write, and what follows from it: a policy file its
// own jail could write would let one command choose the jail of the next (a
// wider filesystem, the host's network), so it is refused before anything
// runs; and a hidden path under a writable bind cannot hold (the host may
// write or replace the file there later; its parents are pinned against the
// jail), so it is named wherever brig says what it enforces.
#pragma once

#include <string>
#include <vector>

#include "jail/base/error.h"
#include "jail/spec.h"

namespace brig::policy {

// Fails, naming the file and the writable tree, when one of `files`
// (LoadedPolicy::files) lies where `spec` lets the jail write: a writable
// bind, or a read-write Landlock path when the jail shares the host's mounts.
Result<void> refuse_writable_policy_files(const std::vector<std::string>& files,
                                          const jail::JailSpec& spec);

// Fails, naming the writable tree, when the audit log `path` (as named, or
// its real path) lies where `spec` lets the jail write: the jails it
// records could rewrite their own trail.
Result<void> refuse_writable_audit_log(const std::string& path, const jail::JailSpec& spec);

// One line per hidden path (mask) of `spec` that lies under one of its
// writable binds ("X (under the writable Y)"), or in a read-only tree that
// keeps its owner (as root: the idmapped workspace, where no snapshot holds
// it against the host's later changes). Empty when every mask holds.
std::vector<std::string> weak_hidden_paths(const jail::JailSpec& spec);

}  // namespace brig::policy
