// Standard base64 (RFC 4648, with padding), for file bytes sent as MCP image
// or blob content.
#pragma once

#include <string>
#include <string_view>

namespace brig::files {

// bytes encoded as base64 with '=' padding; empty input gives "".
std::string base64_encode(std::string_view bytes);

}  // namespace brig::files
