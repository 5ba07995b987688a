// UTF-8 for command output: a process writes bytes, not text, and pipes
// split its writes anywhere. What goes into a JSON string is repaired (each
// invalid sequence becomes U+FFFD), and cuts are moved to character
// boundaries so that a split never manufactures an invalid sequence.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brig::exec {

// bytes with every invalid UTF-8 sequence (overlong forms, surrogates, code
// points above U+10FFFF, stray continuation bytes, truncated sequences)
// replaced by U+FFFD: one per maximal invalid subpart, as Unicode recommends.
std::string repair_utf8(std::string_view bytes);

// The length of bytes without a trailing sequence that is valid so far but
// incomplete (at most 3 bytes): what can be shown now, before the rest of
// the character arrives.
std::size_t complete_prefix_length(std::string_view bytes);

// How many leading continuation bytes (at most 3) to skip so that a cut made
// at the start of bytes lands on a character boundary.
std::size_t leading_continuation_bytes(std::string_view bytes);

}  // namespace brig::exec
