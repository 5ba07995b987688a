// find_files: files whose paths match a glob, under a directory.
#pragma once

#include <cstdint>

#include "jail/base/error.h"
#include "protocol/mcp_types.h"
#include "server/worker/op.h"

namespace brig::search {

inline constexpr std::int64_t kDefaultFindLimit = 200;
inline constexpr std::int64_t kMaxFindLimit = 10000;

// Runs in the worker. args: pattern (glob, see glob.h); path (directory;
// default the workspace); hidden (default false, or true when the pattern
// names a hidden component such as ".github/**"); gitignore (default true:
// honour .gitignore, .ignore and .git/info/exclude); limit; offset (for
// paging); sort ("path", default, or "modified": newest first).
// Files and symlinks (not followed; a symlinked directory is not entered)
// are matched; directories are not listed themselves. The header holds the
// page of paths (relative to the searched directory), how many matched in
// all, what was skipped by reason, and next_offset when more follow.
Result<worker::OpReply> find_files_op(const protocol::Json& args, const worker::OpContext& ctx);

protocol::ToolDescriptor find_files_descriptor();

// One path per line, then a summary of counts, skips and paging.
protocol::ToolResult format_find_files(const protocol::Json& args, worker::OpReply reply);

}  // namespace brig::search
