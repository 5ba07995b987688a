// list_directory's descriptor and its reply to the client (server side); the
// operation itself runs in brig-worker (server/search/list_directory.h).
#pragma once

#include "protocol/mcp_types.h"
#include "server/files/op.h"

namespace brig::tools {

// The tool's name, description, schemas and annotations.
protocol::ToolDescriptor list_directory_descriptor();

// The tool result for a reply of list_directory_op (server side): one line
// per entry, then what was left out.
protocol::ToolResult format_list_directory(const protocol::Json& args, files::OpReply reply);

}  // namespace brig::tools
