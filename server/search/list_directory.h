// list_directory: a directory's entries with type, size and symlink target,
// optionally several levels deep.
#pragma once

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "protocol/tool_args.h"
#include "server/files/op.h"

namespace brig::search {

inline constexpr std::int64_t kDefaultListDepth = 1;
inline constexpr std::int64_t kMaxListDepth = 10;
inline constexpr std::int64_t kDefaultListLimit = 1000;
inline constexpr std::int64_t kMaxListLimit = 10000;
inline constexpr protocol::IntegerArg kListDepth{"depth", 1, kMaxListDepth, kDefaultListDepth};
inline constexpr protocol::IntegerArg kListLimit{"limit", 1, kMaxListLimit, kDefaultListLimit};

// Runs in the worker. args: path (default: the workspace), depth (levels,
// 1 = the directory's own entries), hidden (include names starting with '.';
// default true), gitignore (leave out what ignore files ignore, with the
// walker's rules: server/search/tree_walk.h; default true), limit (entries).
// A capped result holds the shallow entries; the header counts what was left
// out. A capped listing of depth 1 (a huge directory) pages: next_cursor
// names the last entry shown, and a call with it as `cursor` lists the next
// `limit` entries in path order (deeper listings do not page: list a
// subdirectory instead). Symlinks are listed, never followed; ".git" is listed, never entered.
// The header holds the entries sorted by path; the bytes are empty.
Result<files::OpReply> list_directory_op(const protocol::Json& args, const files::OpContext& ctx);

}  // namespace brig::search
