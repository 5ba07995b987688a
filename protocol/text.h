// Small text helpers for messages that quote client input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brig::protocol {

// s cut to at most max_bytes, ending with "..." when cut. The cut never splits
// a UTF-8 sequence, so quoting client input cannot make brig's own message
// invalid beyond what encode() repairs anyway.
std::string clip(std::string_view s, std::size_t max_bytes);

}  // namespace brig::protocol
