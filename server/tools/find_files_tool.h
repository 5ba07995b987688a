// find_files's descriptor and its reply to the client (server side); the
// operation itself runs in brig-worker (server/search/find_files.h).
#pragma once

#include "protocol/mcp_types.h"
#include "server/files/op.h"

namespace brig::tools {

protocol::ToolDescriptor find_files_descriptor();

// One path per line, then a summary of counts, skips and paging.
protocol::ToolResult format_find_files(const protocol::Json& args, files::OpReply reply);

}  // namespace brig::tools
