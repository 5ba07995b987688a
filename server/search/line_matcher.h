// A search pattern compiled for whole-buffer search: the next line of a
// buffer that holds a match, found with a byte scan where the pattern
// allows one and RE2 (linear time) where it does not.
#pragma once

#include <re2/re2.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "jail/base/error.h"
#include "server/search/literal_finder.h"

namespace brig::search {

struct PatternOptions {
  bool fixed_strings = false;     // the pattern is a literal, not a regex
  bool case_insensitive = false;  // Unicode simple case folding, as RE2's (?i)
  bool smart_case = false;        // case-insensitive unless the pattern has an upper-case letter
};

// A match: [start, end) in the buffer, always within one line.
struct Span {
  std::size_t start = 0;
  std::size_t end = 0;
};

// Matches are confined to lines: '^' and '$' match at line boundaries, and
// nothing (not \s, not [^a], not a literal \n) matches a newline.
class LineMatcher {
 public:
  // Fails with RE2's own words for a bad regex ("missing ): a(b"), or for an
  // empty fixed string or one holding a newline.
  static Result<std::unique_ptr<LineMatcher>> compile(std::string_view pattern,
                                                      PatternOptions options);

  // The first match at or after `from` (a line start); none past the end.
  std::optional<Span> find(std::string_view buffer, std::size_t from) const;
  // The first match inside [line_start, line_end) of buffer, which is one
  // line; what cuts a long line around its match.
  std::optional<Span> find_in_line(std::string_view buffer, std::size_t line_start,
                                   std::size_t line_end) const;

  bool case_insensitive() const { return case_insensitive_; }
  // How matches are found, for tests and benchmarks: "literal",
  // "literal+fold", "regex+prefilter", "regex".
  std::string_view strategy() const;

 private:
  LineMatcher() = default;
  std::optional<Span> regex_in_line(std::string_view buffer, std::size_t line_start,
                                    std::size_t line_end) const;

  std::unique_ptr<RE2> re_;
  std::optional<LiteralFinder> finder_;
  // The finder's hit is a whole match (pure literal, no Unicode folding
  // concerns); else each hit's line is confirmed by RE2.
  bool finder_is_exact_ = false;
  bool case_insensitive_ = false;
};

}  // namespace brig::search
