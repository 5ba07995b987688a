// search's descriptor and its reply to the client (server side); the
// operation itself runs in brig-worker (server/search/search.h).
#pragma once

#include "protocol/mcp_types.h"
#include "server/files/op.h"

namespace brig::tools {

// The tool's name, description, schemas and annotations.
protocol::ToolDescriptor search_descriptor();

// The tool result for a reply of search_op (server side): ripgrep-like text
// ("path" heading, "12:text" matches, "13-text" context, "--" between
// groups) and a summary that always says what was skipped; structuredContent
// as the output schema says, with each line's text.
protocol::ToolResult format_search(const protocol::Json& args, files::OpReply reply);

}  // namespace brig::tools
