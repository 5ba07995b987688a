// A bound on how deeply a policy's dotted keys nest, checked on the text
// before toml++ parses it.
//
// toml++ 3.3.0 makes a table for every part of a dotted key or table name
// (`a.b.c = 1`, `[a.b.c]`) with no limit of its own (arrays and inline
// tables it stops at 256 levels), and both its parser and its destructor walk
// that nesting recursively: a 2 MB line of `a.a.a…` (about 60 000 parts in
// the fuzz build, more in a release build) overflows the stack and kills
// whoever loads the policy. brig's own keys have at most three parts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace brig::policy {

// More parts than any policy needs, and few enough that the worst nesting
// toml++ still accepts (256 inline tables, each entered by a key of this many
// parts: about 8 000 levels) is far from the stack's end.
inline constexpr std::size_t kMaxKeyParts = 32;

struct TextPos {
  std::uint32_t line = 0;    // from 1
  std::uint32_t column = 0;  // from 1, in bytes
};

// Where the first dotted key or table name with more than `max_parts` parts
// reaches its part max_parts + 1 (the dot before it), or nullopt. A quoted
// part counts as one, whatever it holds; dots inside strings and comments
// count for nothing. A float such as 1.5 counts as two parts, which costs
// nothing: no policy key takes a float, and none has 32 parts. Linear, no
// recursion.
std::optional<TextPos> find_overlong_key(std::string_view text,
                                         std::size_t max_parts = kMaxKeyParts);

}  // namespace brig::policy
