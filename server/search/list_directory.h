// list_directory: a directory's entries with type, size and symlink target,
// optionally several levels deep.
#pragma once

#include "jail/base/error.h"
#include "protocol/mcp_types.h"
#include "server/worker/op.h"

namespace brig::search {

inline constexpr std::int64_t kDefaultListDepth = 1;
inline constexpr std::int64_t kMaxListDepth = 10;
inline constexpr std::int64_t kDefaultListLimit = 1000;
inline constexpr std::int64_t kMaxListLimit = 10000;

// Runs in the worker. args: path (default: the workspace), depth (levels,
// 1 = the directory's own entries), hidden (include names starting with '.';
// default true), gitignore (leave out what ignore files ignore, with the
// walker's rules: server/search/tree_walk.h; default true), limit (entries).
// A capped result holds the shallow entries; the header counts what was left
// out. Symlinks are listed, never followed; ".git" is listed, never entered.
// The header holds the entries sorted by path; the bytes are empty.
Result<worker::OpReply> list_directory_op(const protocol::Json& args, const worker::OpContext& ctx);

// The tool's name, description, schemas and annotations.
protocol::ToolDescriptor list_directory_descriptor();

// The tool result for a reply of list_directory_op (server side): one line
// per entry, then what was left out.
protocol::ToolResult format_list_directory(const protocol::Json& args, worker::OpReply reply);

}  // namespace brig::search
