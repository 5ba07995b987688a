// "Did you mean …?" for misspelled keys, enum values and policy names.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace brig::policy {

// The candidate closest to `typed` by edit distance (case-insensitive), if it
// is close enough to be a plausible typo; nullopt otherwise.
std::optional<std::string_view> closest(std::string_view typed,
                                        std::span<const std::string_view> candidates);

// "a", "a or b", "a, b or c" with each item quoted.
std::string quoted_list(std::span<const std::string_view> items);

}  // namespace brig::policy
