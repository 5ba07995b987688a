// The workspace: the directory brig's tools work in. Chosen by --workspace
// or, implicitly, the current directory.
//
// Decision: MCP clients often start servers in `/` or the home directory, so
// an IMPLICIT workspace that is `/`, the home directory itself, or a system
// directory (/usr, /etc, /tmp, /proc/..., see is_system_directory) is refused.
// An EXPLICIT --workspace may be any existing directory except `/` (the whole
// filesystem is never a workspace); a home or system directory is accepted
// with a warning, since someone typed it on purpose.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "jail/base/error.h"

namespace brig::commands {

struct Workspace {
  std::string path;                    // absolute, symlinks resolved
  bool implicit = false;               // true when taken from the current directory
  std::optional<std::string> warning;  // set when an explicit choice is risky
};

// Resolves requested (relative to cwd when not absolute) or, when empty, cwd
// itself, and applies the rules above. home is $HOME (empty: unknown). Fails
// when the directory does not exist, is not a directory, or is refused.
Result<Workspace> resolve_workspace(const std::optional<std::string>& requested,
                                    const std::string& cwd, const std::string& home);

// True for a canonical path that is a system directory: the top-level ones
// (/usr, /etc, /var, /tmp, ...), their well-known children (/usr/lib, ...),
// and anything under /proc, /sys, /dev, /boot or /etc.
bool is_system_directory(std::string_view path);

}  // namespace brig::commands
