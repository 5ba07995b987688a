// edit_file: exact-text replacements in one file, all or nothing, with a
// unified diff of the change.
#pragma once

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "server/files/op.h"

namespace brig::files {

// Files larger than this are refused: the whole file is held in memory twice.
inline constexpr std::size_t kMaxEditBytes = 32u << 20;

// Runs in the worker. args: path, edits ([{old_text, new_text, replace_all}],
// applied in order; see apply_edits in server/files/text_edit.h), dry_run
// (default false: write the result). The file keeps its CRLF line endings,
// BOM and mode; the write is atomic and fails if the file changed since it
// was read. The reply's bytes are the unified diff (cut to ctx.max_bytes at a
// line boundary); the header says what was replaced and written.
Result<OpReply> edit_file_op(const protocol::Json& args, const OpContext& ctx);

}  // namespace brig::files
