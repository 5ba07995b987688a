// How many bytes text takes once written as a JSON string, so an operation
// can keep its reply under the client's limit before anything is encoded.
#pragma once

#include <cstddef>
#include <string_view>

namespace brig::search {

// An upper bound on the encoded size of `text` as a JSON string, quotes
// included: escapes count in full, and each non-ASCII byte as if it were
// invalid UTF-8 (replaced by the three bytes of U+FFFD).
std::size_t json_string_cost(std::string_view text);

}  // namespace brig::search
