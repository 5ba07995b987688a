// write_file's descriptor and its reply to the client (server side); the
// operation itself runs in brig-worker (server/files/write_file.h).
#pragma once

#include "protocol/mcp_types.h"
#include "server/files/op.h"

namespace brig::tools {

// The tool's name, description, schemas and annotations.
protocol::ToolDescriptor write_file_descriptor();

// The tool result for a reply of write_file_op (server side).
protocol::ToolResult format_write_file(const protocol::Json& args, files::OpReply reply);

}  // namespace brig::tools
