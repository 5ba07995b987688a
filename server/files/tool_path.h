// The host path a tool argument names. Inside the worker's jail the
// workspace is mounted at its own path, so the same string works on both
// sides; the kernel decides what it may reach.
#pragma once

#include <string>
#include <string_view>

#include "jail/base/error.h"

namespace brig::files {

// `path` as a tool argument spells it (text_to_name: the escape that shows
// a name's bytes that are not UTF-8, server/files/utf8.h), made absolute
// (`workspace`/`path` when relative) and normalized with ".." kept for the
// kernel to resolve (jail/base/path.h, DotDot::keep). Fails for an empty
// path, one with a NUL byte, or one that spells bytes as escapes no listed
// name uses; `what` names the operation in that error ("read file").
Result<std::string> resolve_path(std::string_view workspace, std::string_view path,
                                 std::string_view what);

}  // namespace brig::files
