#include "server/search/wildmatch.h"

#include <cctype>
#include <cstddef>

namespace brig::search {
namespace {

// The outcomes of git's matcher. The two aborts prune the backtracking of
// '*' so that a pattern with many stars stays polynomial: abort_all says no
// shorter remaining text can match either; abort_to_starstar says only an
// enclosing "**" may still try further.
enum class Wild { match, no_match, abort_all, abort_to_starstar };

bool is_special(char c) {
  return c == '*' || c == '?' || c == '[' || c == '\\';
}

bool in_posix_class(std::string_view name, unsigned char c, bool* known) {
  *known = true;
  if (name == "alnum") return std::isalnum(c);
  if (name == "alpha") return std::isalpha(c);
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return std::iscntrl(c);
  if (name == "digit") return std::isdigit(c);
  if (name == "graph") return std::isgraph(c);
  if (name == "lower") return std::islower(c);
  if (name == "print") return std::isprint(c);
  if (name == "punct") return std::ispunct(c);
  if (name == "space") return std::isspace(c);
  if (name == "upper") return std::isupper(c);
  if (name == "xdigit") return std::isxdigit(c);
  *known = false;
  return false;
}

class Matcher {
 public:
  Matcher(std::string_view pattern, std::string_view text, bool pathname)
      : pat_(pattern), text_(text), pathname_(pathname) {}

  // depth: how many stars enclose this attempt. Each '*' run tries the rest
  // of the pattern one level deeper, so a pattern of many stars would
  // recurse as deep as it has stars; past kMaxStarRuns it matches nothing.
  Wild run(std::size_t p, std::size_t t, std::size_t depth = 0) const {
    if (depth > 2 * kMaxStarRuns) return Wild::abort_all;
    for (; p < pat_.size(); ++p, ++t) {
      const char pc = pat_[p];
      if (t == text_.size() && pc != '*') return Wild::abort_all;
      const auto tc = static_cast<unsigned char>(text_[t]);
      switch (pc) {
        case '\\':
          // An escaped byte matches itself; a lone trailing '\' matches nothing.
          if (++p == pat_.size()) return Wild::no_match;
          if (tc != static_cast<unsigned char>(pat_[p])) return Wild::no_match;
          break;
        case '?':
          if (pathname_ && tc == '/') return Wild::no_match;
          break;
        case '*': {
          const std::size_t first = p;
          while (p < pat_.size() && pat_[p] == '*') ++p;
          bool match_slash = !pathname_;
          if (pathname_ && p - first >= 2) {
            const bool starts_component = first == 0 || pat_[first - 1] == '/';
            const bool ends_component =
                p == pat_.size() || pat_[p] == '/' ||
                (pat_[p] == '\\' && p + 1 < pat_.size() && pat_[p + 1] == '/');
            if (starts_component && ends_component) {
              // "**/" may stand for no directory at all.
              if (p < pat_.size() && pat_[p] == '/' && run(p + 1, t, depth + 1) == Wild::match)
                return Wild::match;
              match_slash = true;
            }
          }
          if (p == pat_.size()) {
            if (!match_slash && text_.find('/', t) != std::string_view::npos) return Wild::no_match;
            return Wild::match;
          }
          if (!match_slash && pat_[p] == '/') {
            // One '*' before '/' takes the rest of this component; the loop
            // then matches the two slashes.
            const std::size_t slash = text_.find('/', t);
            if (slash == std::string_view::npos) return Wild::no_match;
            t = slash;
            break;
          }
          return star_loop(p, t, match_slash, depth + 1);
        }
        case '[': {
          const std::size_t close = bracket(p, tc);
          if (close == kAbortAll) return Wild::abort_all;
          if (close == kNoMatch) return Wild::no_match;
          p = close;
          break;
        }
        default:
          if (tc != static_cast<unsigned char>(pc)) return Wild::no_match;
      }
    }
    return t == text_.size() ? Wild::match : Wild::no_match;
  }

 private:
  static constexpr std::size_t kAbortAll = static_cast<std::size_t>(-1);
  static constexpr std::size_t kNoMatch = static_cast<std::size_t>(-2);

  // Lets a star that precedes pattern index p consume more and more of the
  // text from t, trying the rest of the pattern after each step.
  Wild star_loop(std::size_t p, std::size_t t, bool match_slash, std::size_t depth) const {
    for (;; ++t) {
      if (t == text_.size()) return Wild::abort_all;
      if (!is_special(pat_[p])) {
        // The text up to the next occurrence of the literal that follows
        // must belong to the star.
        const char want = pat_[p];
        while (t < text_.size() && (match_slash || text_[t] != '/') && text_[t] != want) ++t;
        if (t == text_.size() || text_[t] != want) return Wild::no_match;
      }
      const Wild w = run(p, t, depth);
      if (w != Wild::no_match) {
        if (!match_slash || w != Wild::abort_to_starstar) return w;
      } else if (!match_slash && text_[t] == '/') {
        return Wild::abort_to_starstar;
      }
    }
  }

  // A bracket expression opening at pattern index p, against byte tc.
  // Returns the index of its closing ']', or kNoMatch / kAbortAll.
  std::size_t bracket(std::size_t p, unsigned char tc) const {
    const std::size_t n = pat_.size();
    std::size_t q = p + 1;
    auto at = [&](std::size_t i) -> unsigned char {
      return i < n ? static_cast<unsigned char>(pat_[i]) : 0;
    };
    unsigned char c = at(q);
    if (c == '^') c = '!';
    const bool negated = c == '!';
    if (negated) c = at(++q);
    unsigned char prev = 0;
    bool matched = false;
    while (true) {
      if (q >= n) return kAbortAll;
      if (c == '\\') {
        if (++q >= n) return kAbortAll;
        c = at(q);
        if (tc == c) matched = true;
      } else if (c == '-' && prev != 0 && q + 1 < n && pat_[q + 1] != ']') {
        c = at(++q);
        if (c == '\\') {
          if (++q >= n) return kAbortAll;
          c = at(q);
        }
        if (tc <= c && tc >= prev) matched = true;
        c = 0;  // a range cannot start another range
      } else if (c == '[' && at(q + 1) == ':') {
        const std::size_t s = q + 2;
        std::size_t e = s;
        while (e < n && pat_[e] != ']') ++e;
        if (e >= n) return kAbortAll;
        if (e == s || pat_[e - 1] != ':') {
          // No ":]": the '[' is an ordinary member.
          if (tc == '[') matched = true;
        } else {
          bool known = false;
          if (in_posix_class(pat_.substr(s, e - s - 1), tc, &known)) matched = true;
          if (!known) return kAbortAll;
          q = e;
          c = 0;
        }
      } else if (tc == c) {
        matched = true;
      }
      prev = c;
      if (++q < n && pat_[q] == ']') break;
      c = at(q);
    }
    if (matched == negated || (pathname_ && tc == '/')) return kNoMatch;
    return q;
  }

  std::string_view pat_;
  std::string_view text_;
  bool pathname_;
};

}  // namespace

bool wildmatch(std::string_view pattern, std::string_view text, bool pathname) {
  return Matcher(pattern, text, pathname).run(0, 0) == Wild::match;
}

std::size_t star_runs(std::string_view pattern) {
  std::size_t runs = 0;
  bool in_run = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const bool star = pattern[i] == '*';
    if (star && !in_run) ++runs;
    in_run = star;
    if (pattern[i] == '\\') ++i;
  }
  return runs;
}

bool is_literal_pattern(std::string_view pattern) {
  for (char c : pattern)
    if (is_special(c)) return false;
  return true;
}

}  // namespace brig::search
