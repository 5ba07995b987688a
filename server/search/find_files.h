// find_files: files whose paths match a glob, under a directory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "protocol/tool_args.h"
#include "server/files/op.h"

namespace brig::search {

inline constexpr std::int64_t kDefaultFindLimit = 200;
inline constexpr std::int64_t kMaxFindLimit = 10000;
inline constexpr protocol::IntegerArg kFindLimit{"limit", 1, kMaxFindLimit, kDefaultFindLimit};
inline constexpr protocol::IntegerArg kFindOffset{"offset", 0, protocol::kMaxJsonInteger, 0};

// Runs in the worker. args: pattern (glob, see glob.h); path (directory;
// default the workspace); hidden (default false, or true when the pattern
// names a hidden component such as ".github/**"); gitignore (default true:
// honour .gitignore, .ignore and .git/info/exclude); limit; offset (for
// paging); sort ("path", default, or "modified": newest first).
// Files and symlinks (not followed; a symlinked directory is not entered)
// are matched; directories are not listed themselves. The header holds the
// page of paths (relative to the searched directory), how many matched in
// all, what was skipped by reason, and next_offset when more follow.
Result<files::OpReply> find_files_op(const protocol::Json& args, const files::OpContext& ctx);

struct FindTuning {
  // Threads reading directories ahead of the walk; SIZE_MAX: one per usable
  // core besides the walk's own.
  std::size_t read_ahead_threads = SIZE_MAX;
};
// find_files_op with a thread count (benchmarks compare them).
Result<files::OpReply> find_files_with(const protocol::Json& args, const files::OpContext& ctx,
                                       FindTuning tuning);

}  // namespace brig::search
