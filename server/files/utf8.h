// UTF-8 checks for file text that is sent as a JSON string: the encoder
// replaces each invalid sequence with U+FFFD, and the result says so.
#pragma once

#include <cstddef>
#include <string_view>

namespace brig::files {

// How many invalid UTF-8 sequences `text` holds (each becomes one U+FFFD).
// Overlong forms, surrogates and code points above U+10FFFF count as invalid.
std::size_t count_invalid_utf8(std::string_view text);

// The longest prefix of `text` of at most max_bytes that does not end inside
// a multi-byte sequence.
std::size_t utf8_prefix_length(std::string_view text, std::size_t max_bytes);

}  // namespace brig::files
