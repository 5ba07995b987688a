// The host path a tool argument names. Inside the worker's jail the
// workspace is mounted at its own path, so the same string works on both
// sides; the kernel decides what it may reach.
#pragma once

#include <string>
#include <string_view>

#include "jail/base/error.h"

namespace brig::files {

// `path` when absolute, else `workspace`/`path`; "." and doubled '/' are
// dropped, ".." is kept for the kernel to resolve (a lexical ".." is wrong
// across symlinks). Fails for an empty path or one with a NUL byte; `what`
// names the operation in that error ("read file").
Result<std::string> resolve_path(std::string_view workspace, std::string_view path,
                                 std::string_view what);

// The directory part of an absolute path ("/a/b" -> "/a", "/a" -> "/").
std::string parent_of(std::string_view path);
// The last component of an absolute path ("/a/b" -> "b"; "/" -> "").
std::string name_of(std::string_view path);

}  // namespace brig::files
