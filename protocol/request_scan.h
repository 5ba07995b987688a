// The fast path for the commonest incoming line: one JSON-RPC request object.
// Pure: no I/O. Internal to protocol/.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "protocol/json_rpc.h"

namespace brig::protocol {

// Decodes line straight into a Request, without a DOM for the envelope, when
// it is a single object whose members are exactly "jsonrpc": "2.0", a valid
// "id", a string "method" and optionally an object "params", each once, and
// everything in it is JSON this scanner reads exactly as nlohmann does. For
// those lines the result equals what parse_line + decode_message give. Any
// other line, valid or not, is declined (nullopt) and must take that general
// path, which owns every error and every unusual shape: the scanner never
// decides an error. One difference in form: a tools/call whose "method"
// comes before its "params" has "name" and "arguments" in tool_call, not in
// params (see ToolCallParams).
std::optional<Request> scan_request(std::string_view line, std::size_t max_depth);

}  // namespace brig::protocol
