#include "server/search/glob.h"

#include <fmt/format.h>

#include "protocol/text.h"
#include "server/search/wildmatch.h"

namespace brig::search {
namespace {

constexpr std::string_view kGlobOp = "glob";

// The index just past the bracket expression opening at `open`, or `open`
// + 1 when it never closes (then the '[' is an ordinary byte to the brace
// scanner; wildmatch decides what it means).
std::size_t skip_bracket(std::string_view s, std::size_t open) {
  std::size_t i = open + 1;
  if (i < s.size() && (s[i] == '!' || s[i] == '^')) ++i;
  if (i < s.size() && s[i] == ']') ++i;  // a leading ']' is a member
  for (; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == ']') {
      return i + 1;
    }
  }
  return open + 1;
}

Error glob_error(std::string_view pattern, std::string why) {
  // The pattern may be megabytes of braces: the message quotes its start.
  return Error{std::string(kGlobOp), protocol::clip(pattern, 200), std::move(why), 0};
}

struct Braces {
  std::size_t open = std::string_view::npos;
  std::size_t close = std::string_view::npos;
  std::vector<std::string_view> options;
};

// The first top-level {...} group of s with its comma-separated options.
Result<Braces> first_group(std::string_view s) {
  Braces b;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      ++i;
    } else if (c == '[') {
      i = skip_bracket(s, i) - 1;
    } else if (c == '{') {
      b.open = i;
      break;
    }
  }
  if (b.open == std::string_view::npos) return b;
  int depth = 0;
  std::size_t option_start = b.open + 1;
  for (std::size_t i = b.open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      ++i;
    } else if (c == '[') {
      i = skip_bracket(s, i) - 1;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (--depth == 0) {
        b.close = i;
        b.options.push_back(s.substr(option_start, i - option_start));
        return b;
      }
    } else if (c == ',' && depth == 1) {
      b.options.push_back(s.substr(option_start, i - option_start));
      option_start = i + 1;
    }
  }
  return std::unexpected(glob_error(s, "'{' is never closed; write \\{ for a literal brace"));
}

// Refuses braces nested deeper than kMaxBraceDepth or more than
// kMaxBraceGroups groups, in one pass, before any expansion copies the
// pattern. Unclosed groups are left to first_group(), which names them.
Result<void> check_brace_shape(std::string_view s) {
  std::size_t depth = 0;
  std::size_t groups = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      ++i;
    } else if (c == '[') {
      i = skip_bracket(s, i) - 1;
    } else if (c == '{') {
      if (++depth > kMaxBraceDepth) {
        return std::unexpected(glob_error(
            s, fmt::format("braces nest more than {} deep; write \\{{ for a literal brace",
                           kMaxBraceDepth)));
      }
      if (++groups > kMaxBraceGroups) {
        return std::unexpected(
            glob_error(s, fmt::format("more than {} brace groups; write \\{{ for a literal brace",
                                      kMaxBraceGroups)));
      }
    } else if (c == '}' && depth > 0) {
      --depth;
    }
  }
  return {};
}

// "a/b/*.c" -> "a/b": the leading components that hold no wildcard.
std::string fixed_dirs_of(std::string_view pattern) {
  std::size_t end = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = pattern.find('/', start);
    if (slash == std::string_view::npos) break;
    if (!is_literal_pattern(pattern.substr(start, slash - start))) break;
    end = slash;
    start = slash + 1;
  }
  return std::string(pattern.substr(0, end));
}

// Whether one of two '/'-separated paths is a component-wise prefix of the
// other ("a" and "a/b" yes; "a" and "ab" no).
bool on_one_line(std::string_view x, std::string_view y) {
  if (x.size() > y.size()) std::swap(x, y);
  if (x.empty()) return true;
  return y.starts_with(x) && (y.size() == x.size() || y[x.size()] == '/');
}

}  // namespace

Result<std::vector<std::string>> expand_braces(std::string_view pattern) {
  BRIG_TRY_VOID(check_brace_shape(pattern));
  std::vector<std::string> out;
  // Patterns still to expand, the next one last: a stack instead of
  // recursion. Each yields at least one alternative, so the stack and the
  // output together stay within the alternatives' limit.
  std::vector<std::string> pending{std::string(pattern)};
  while (!pending.empty()) {
    std::string s = std::move(pending.back());
    pending.pop_back();
    const Braces b = BRIG_TRY(first_group(s));
    if (b.open == std::string_view::npos) {
      out.push_back(std::move(s));
      continue;
    }
    if (out.size() + pending.size() + b.options.size() > kMaxGlobAlternatives) {
      return std::unexpected(glob_error(
          pattern,
          fmt::format("braces expand to more than {} alternatives", kMaxGlobAlternatives)));
    }
    const std::string_view view = s;
    for (auto option = b.options.rbegin(); option != b.options.rend(); ++option) {
      std::string next;
      next.reserve(s.size());
      next.append(view.substr(0, b.open));
      next.append(*option);
      next.append(view.substr(b.close + 1));
      pending.push_back(std::move(next));
    }
  }
  return out;
}

Result<Glob> Glob::compile(std::string_view pattern) {
  if (pattern.empty()) {
    return std::unexpected(Error{std::string(kGlobOp), "", "the pattern is empty", 0});
  }
  Glob g;
  g.pattern_ = std::string(pattern);
  for (std::string& alt : BRIG_TRY(expand_braces(pattern))) {
    std::string_view p = alt;
    while (p.starts_with("./")) p.remove_prefix(2);
    bool anchored = false;
    while (p.starts_with('/')) {
      p.remove_prefix(1);
      anchored = true;
    }
    std::string text(p);
    if (text.ends_with('/')) text += "**";
    if (text.empty()) continue;
    if (star_runs(text) > kMaxStarRuns) {
      return std::unexpected(glob_error(
          pattern, fmt::format("more than {} runs of '*' in one pattern", kMaxStarRuns)));
    }
    Alternative a;
    // "**/rest" with no '/' in rest matches rest's name at any depth (a
    // leading "**/" matches no directory too): the same as "rest" alone,
    // which is matched against the name only. "**/*.c" is the common case.
    if (!anchored && text.starts_with("**/") && text.find('/', 3) == std::string::npos &&
        text.size() > 3)
      text.erase(0, 3);
    a.basename = !anchored && text.find('/') == std::string::npos;
    if (!a.basename) a.fixed_dirs = fixed_dirs_of(text);
    // "*.c": a suffix compare decides, as wildmatch would (a name holds no
    // '/', and '*' matches a leading '.').
    a.by_suffix = a.basename && text.size() > 1 && text[0] == '*' &&
                  is_literal_pattern(std::string_view(text).substr(1));
    a.pattern = std::move(text);
    g.alternatives_.push_back(std::move(a));
  }
  if (g.alternatives_.empty()) {
    return std::unexpected(Error{std::string(kGlobOp), std::string(pattern),
                                 "the pattern names no file (it is only '/' or './')", 0});
  }
  return g;
}

bool Glob::matches(std::string_view path) const {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (const Alternative& a : alternatives_) {
    if (a.by_suffix) {
      if (name.ends_with(std::string_view(a.pattern).substr(1))) return true;
      continue;
    }
    if (a.basename ? wildmatch(a.pattern, name, /*pathname=*/false)
                   : wildmatch(a.pattern, path, /*pathname=*/true))
      return true;
  }
  return false;
}

bool Glob::matches_dir(std::string_view dir) const {
  if (matches(dir)) return true;
  for (const Alternative& a : alternatives_) {
    const std::string_view p = a.pattern;
    if (p.size() > 3 && p.ends_with("/**") && wildmatch(p.substr(0, p.size() - 3), dir, true))
      return true;
  }
  return false;
}

bool Glob::names_hidden() const {
  for (const Alternative& a : alternatives_) {
    std::string_view rest = a.pattern;
    while (!rest.empty()) {
      const std::size_t slash = rest.find('/');
      const std::string_view part = rest.substr(0, slash);
      if (part.starts_with('.') && part != "." && part != "..") return true;
      rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
    }
  }
  return false;
}

bool Glob::may_match_below(std::string_view dir) const {
  for (const Alternative& a : alternatives_) {
    if (a.basename || on_one_line(a.fixed_dirs, dir)) return true;
  }
  return false;
}

Result<GlobSet> GlobSet::compile(const std::vector<std::string>& patterns) {
  GlobSet set;
  for (const std::string& p : patterns) set.globs_.push_back(BRIG_TRY(Glob::compile(p)));
  return set;
}

bool GlobSet::matches(std::string_view path) const {
  for (const Glob& g : globs_)
    if (g.matches(path)) return true;
  return false;
}

bool GlobSet::matches_dir(std::string_view dir) const {
  for (const Glob& g : globs_)
    if (g.matches_dir(dir)) return true;
  return false;
}

bool GlobSet::names_hidden() const {
  for (const Glob& g : globs_)
    if (g.names_hidden()) return true;
  return false;
}

bool GlobSet::may_match_below(std::string_view dir) const {
  for (const Glob& g : globs_)
    if (g.may_match_below(dir)) return true;
  return false;
}

}  // namespace brig::search
