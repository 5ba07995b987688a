// The globs a tool call names: find_files' pattern and search's include and
// exclude filters. Matching is git's wildmatch (see wildmatch.h) plus brace
// alternatives, on paths relative to the searched directory.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/error.h"

namespace brig::search {

// How many alternatives `{a,b}` braces may expand to; a pattern that
// expands to more is refused rather than matched slowly.
inline constexpr std::size_t kMaxGlobAlternatives = 256;
// How deep braces may nest ("{a,{b,c}}" is 2), and how many groups a
// pattern may hold: each group costs a pass over the pattern, so both are
// bounded before anything is expanded.
inline constexpr std::size_t kMaxBraceDepth = 10;
inline constexpr std::size_t kMaxBraceGroups = 64;

// Every pattern `pattern` stands for once its {a,b,...} groups (nested or
// not) are expanded; braces inside [...], escaped ones (\{) and a '}'
// that closes nothing are plain bytes. Fails for an unclosed '{', braces
// nested deeper than kMaxBraceDepth, more than kMaxBraceGroups groups, or
// more than kMaxGlobAlternatives alternatives. Iterative: no recursion
// whose depth the pattern decides.
Result<std::vector<std::string>> expand_braces(std::string_view pattern);

// One compiled glob.
//   - A pattern without '/' matches the last component of a path at any
//     depth ("*.cc" matches "a/b/x.cc"), as in .gitignore and ripgrep -g.
//   - Otherwise it matches the whole relative path: '*', '?' and [...] stay
//     within one component, "**" spans any number of them
//     ("src/**/*.cc", "src/{a,b}/*"). A leading "/" or "./" is dropped.
//   - A trailing '/' means everything under that directory ("build/" is
//     "build/**").
class Glob {
 public:
  static Result<Glob> compile(std::string_view pattern);

  // Whether the path (relative, '/'-separated, no leading "./") matches.
  bool matches(std::string_view path) const;
  // Whether directory `dir` itself is matched, so that everything under it
  // is: "build", "src/gen" or "tests/" (which is "tests/**") match the
  // directory, "*.c" matches none.
  bool matches_dir(std::string_view dir) const;
  // False only when no path below directory `dir` can match, so a walk may
  // skip it. (Over-approximates: true does not promise a match.)
  bool may_match_below(std::string_view dir) const;

  // Whether the pattern itself names a hidden component (".github/**",
  // ".env", ".*"): a call that asks for such names wants hidden entries.
  bool names_hidden() const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Alternative {
    std::string pattern;
    bool basename = false;   // no '/': matched against the last component
    bool by_suffix = false;  // a basename "*literal": the name ends with the literal
    std::string fixed_dirs;  // leading components without wildcards, "a/b"
  };
  std::string pattern_;
  std::vector<Alternative> alternatives_;
};

// A list of globs; matches when any one does.
class GlobSet {
 public:
  static Result<GlobSet> compile(const std::vector<std::string>& patterns);
  bool empty() const { return globs_.empty(); }
  bool matches(std::string_view path) const;
  bool matches_dir(std::string_view dir) const;
  bool may_match_below(std::string_view dir) const;
  bool names_hidden() const;

 private:
  std::vector<Glob> globs_;
};

}  // namespace brig::search
