// How many bytes text takes once written as a JSON string, so an operation
// can keep its reply under the client's limit before anything is encoded.
#pragma once

#include <cstddef>
#include <string_view>

namespace brig::files {

// An upper bound on what byte c becomes inside a JSON string: escapes count
// in full (\n and the like, \u00XX for other control characters), and each
// non-ASCII byte as if it were invalid UTF-8 (replaced by the three bytes of
// U+FFFD).
constexpr std::size_t json_byte_cost(unsigned char c) {
  if (c == '"' || c == '\\') return 2;
  if (c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f') return 2;
  if (c < 0x20) return 6;
  if (c >= 0x80) return 3;
  return 1;
}

// An upper bound on the encoded size of `text` as a JSON string, quotes
// included, json_byte_cost() for each byte.
std::size_t json_string_cost(std::string_view text);

}  // namespace brig::files
