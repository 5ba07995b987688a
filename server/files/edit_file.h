// edit_file: exact-text replacements in one file, all or nothing, with a
// unified diff of the change.
#pragma once

#include "jail/base/error.h"
#include "protocol/mcp_types.h"
#include "server/worker/op.h"

namespace brig::files {

// Files larger than this are refused: the whole file is held in memory twice.
inline constexpr std::size_t kMaxEditBytes = 32u << 20;

// Runs in the worker. args: path, edits ([{old_text, new_text, replace_all}],
// applied in order; see apply_edits in server/files/text_edit.h), dry_run
// (default false: write the result). The file keeps its CRLF line endings,
// BOM and mode; the write is atomic and fails if the file changed since it
// was read. The reply's bytes are the unified diff (cut to ctx.max_bytes at a
// line boundary); the header says what was replaced and written.
Result<worker::OpReply> edit_file_op(const protocol::Json& args, const worker::OpContext& ctx);

// The tool's name, description, schemas and annotations.
protocol::ToolDescriptor edit_file_descriptor();

// The tool result for a reply of edit_file_op (server side): the diff as
// text, and a summary.
protocol::ToolResult format_edit_file(const protocol::Json& args, worker::OpReply reply);

}  // namespace brig::files
