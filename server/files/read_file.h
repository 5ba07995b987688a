// read_file: a file's text by line range, an image as MCP image content, or
// any file's bytes as base64 on request.
#pragma once

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "protocol/tool_args.h"
#include "server/files/op.h"

namespace brig::files {

// Lines returned when the call names no limit.
inline constexpr std::int64_t kDefaultReadLines = 2000;
// The highest line number read_file takes; bounded so that offset + limit
// cannot overflow.
inline constexpr std::int64_t kMaxReadLine = std::int64_t{1} << 48;
inline constexpr protocol::IntegerArg kReadOffset{"offset", 1, kMaxReadLine, 1};
inline constexpr protocol::IntegerArg kReadLimit{"limit", 1, kMaxReadLine, kDefaultReadLines};

// Runs in the worker. args: path, offset (first line, 1-based; default 1),
// limit (lines; default kDefaultReadLines), encoding ("text" default, or
// "base64"). The reply's bytes are the file's raw bytes (the selected lines,
// the image, or the whole file for base64) and never exceed ctx.max_bytes
// once encoded; the header says what they are. Fails for a missing path, a
// directory or special file, an offset past the end, a binary file read as
// text (naming its type and size), and a file too large for base64.
Result<OpReply> read_file_op(const protocol::Json& args, const OpContext& ctx);

}  // namespace brig::files
