// The host path a tool argument names. Inside the worker's jail the
// workspace is mounted at its own path, so the same string works on both
// sides; the kernel decides what it may reach.
#pragma once

#include <string>
#include <string_view>

#include "jail/base/error.h"

namespace brig::files {

// `path` when absolute, else `workspace`/`path`, normalized with ".." kept
// for the kernel to resolve (jail/base/path.h, DotDot::keep). Fails for an
// empty path or one with a NUL byte; `what` names the operation in that
// error ("read file").
Result<std::string> resolve_path(std::string_view workspace, std::string_view path,
                                 std::string_view what);

}  // namespace brig::files
