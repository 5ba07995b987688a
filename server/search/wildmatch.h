// Shell-style pattern matching with git's semantics (wildmatch): the one
// matcher under both .gitignore rules and the tools' globs, so a pattern
// means the same thing in either place.
#pragma once

#include <cstddef>
#include <string_view>

namespace brig::search {

// Patterns come from tool calls and from ignore files a jail can write, and
// matching recurses once per run of '*': a pattern with more runs than this
// matches nothing (Glob::compile refuses it, saying so).
inline constexpr std::size_t kMaxStarRuns = 32;

// Whether `text` matches `pattern` as git matches it:
//   ?        one byte
//   *        any bytes; with `pathname`, not '/'
//   **       with `pathname` and standing as a whole component ("**/x",
//            "x/**", "a/**/b"): any number of directories, including none;
//            elsewhere like '*'
//   [...]    one byte from a set: ranges (a-z), negation ([!...] or [^...]),
//            POSIX classes ([:alpha:]), '\' escapes; never '/' with `pathname`
//   \c       the byte c itself
// A malformed pattern (unterminated '[', bad class name) matches nothing, as
// does one that needs more than kMaxStarRuns nested star attempts.
// Bytes are compared exactly: no case folding, no Unicode awareness.
bool wildmatch(std::string_view pattern, std::string_view text, bool pathname);

// How many runs of '*' `pattern` has ("a*b**c" has 2), escaped ones aside.
std::size_t star_runs(std::string_view pattern);

// True when `pattern` has no wildcard or escape: it can only match itself.
bool is_literal_pattern(std::string_view pattern);

}  // namespace brig::search
