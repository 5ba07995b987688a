// Checks a JailSpec and an ExecRequest before anything is cloned, so a bad
// value fails with the field's name instead of an errno from deep in setup.
#pragma once

#include <optional>
#include <string>

#include "jail/base/error.h"
#include "jail/spec.h"

namespace brig::jail {

// Paths absolute and normalized (no "." or ".." parts, no doubled or trailing
// '/'), no NUL bytes, unique mount targets with parents before children,
// limits > 0, namespaces consistent with the network mode and the mounts.
// Error.where names the field ("mounts[2].target"); Error.why says why.
Result<void> validate(const JailSpec& spec);

// argv non-empty, env entries "NAME=value", cwd absolute or empty, stdio fds
// -1 or >= 0.
Result<void> validate(const ExecRequest& request);

// Why `path` cannot be a Device of a dev mount, or nullopt if it can: it must
// be absolute, normalized and under /dev (not /dev itself), and neither be
// nor lie under what the dev mount makes itself (null, zero, full, random,
// urandom, tty, pts, ptmx, shm, fd, stdin, stdout, stderr).
std::optional<std::string> device_path_problem(const std::string& path);

}  // namespace brig::jail
