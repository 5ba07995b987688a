// read_file's descriptor and its reply to the client (server side); the
// operation itself runs in brig-worker (server/files/read_file.h).
#pragma once

#include "protocol/mcp_types.h"
#include "server/files/op.h"

namespace brig::tools {

// The tool's name, description, schemas and annotations.
protocol::ToolDescriptor read_file_descriptor();

// The tool result for a reply of read_file_op (server side): the text as a
// text block (invalid UTF-8 becomes U+FFFD when encoded, and a note says
// so), images as image content, base64 as a text block; structuredContent
// matches the output schema and holds what was read (lines, sizes), not the
// text again.
protocol::ToolResult format_read_file(const protocol::Json& args, files::OpReply reply);

}  // namespace brig::tools
