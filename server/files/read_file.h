// read_file: a file's text by line range, an image as MCP image content, or
// any file's bytes as base64 on request.
#pragma once

#include "jail/base/error.h"
#include "protocol/mcp_types.h"
#include "server/worker/op.h"

namespace brig::files {

// Lines returned when the call names no limit.
inline constexpr std::int64_t kDefaultReadLines = 2000;

// Runs in the worker. args: path, offset (first line, 1-based; default 1),
// limit (lines; default kDefaultReadLines), encoding ("text" default, or
// "base64"). The reply's bytes are the file's raw bytes (the selected lines,
// the image, or the whole file for base64) and never exceed ctx.max_bytes
// once encoded; the header says what they are. Fails for a missing path, a
// directory or special file, an offset past the end, a binary file read as
// text (naming its type and size), and a file too large for base64.
Result<worker::OpReply> read_file_op(const protocol::Json& args, const worker::OpContext& ctx);

// The tool's name, description, schemas and annotations.
protocol::ToolDescriptor read_file_descriptor();

// The tool result for a reply of read_file_op (server side): the text as a
// text block (invalid UTF-8 becomes U+FFFD when encoded, and a note says
// so), images as image content, base64 as a text block; structuredContent
// matches the output schema.
protocol::ToolResult format_read_file(const protocol::Json& args, worker::OpReply reply);

}  // namespace brig::files
