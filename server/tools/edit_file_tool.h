// edit_file's descriptor and its reply to the client (server side); the
// operation itself runs in brig-worker (server/files/edit_file.h).
#pragma once

#include "protocol/mcp_types.h"
#include "server/files/op.h"

namespace brig::tools {

// The tool's name, description, schemas and annotations.
protocol::ToolDescriptor edit_file_descriptor();

// The tool result for a reply of edit_file_op (server side): the diff as
// text, and a summary.
protocol::ToolResult format_edit_file(const protocol::Json& args, files::OpReply reply);

}  // namespace brig::tools
