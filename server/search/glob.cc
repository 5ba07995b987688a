#include "server/search/glob.h"

#include <fmt/format.h>

#include "server/search/wildmatch.h"

namespace brig::search {
namespace {

constexpr std::string_view kWhat = "glob";

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
  return std::unexpected(Error{std::string(kWhat), std::string(s),
                               "'{' is never closed; write \\{ for a literal brace", 0});
}

Result<void> expand_into(std::string_view s, std::vector<std::string>& out,
                         std::string_view whole) {
  const Braces b = BRIG_TRY(first_group(s));
  if (b.open == std::string_view::npos) {
    if (out.size() >= kMaxGlobAlternatives) {
      return std::unexpected(Error{
          std::string(kWhat), std::string(whole),
          fmt::format("braces expand to more than {} alternatives", kMaxGlobAlternatives), 0});
    }
    out.emplace_back(s);
    return {};
  }
  for (std::string_view option : b.options) {
    std::string next;
    next.reserve(s.size());
    next.append(s.substr(0, b.open));
    next.append(option);
    next.append(s.substr(b.close + 1));
    BRIG_TRY_VOID(expand_into(next, out, whole));
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
  std::vector<std::string> out;
  BRIG_TRY_VOID(expand_into(pattern, out, pattern));
  return out;
}

Result<Glob> Glob::compile(std::string_view pattern) {
  if (pattern.empty()) {
    return std::unexpected(Error{std::string(kWhat), "", "the pattern is empty", 0});
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
    Alternative a;
    a.basename = !anchored && text.find('/') == std::string::npos;
    if (!a.basename) a.fixed_dirs = fixed_dirs_of(text);
    a.pattern = std::move(text);
    g.alternatives_.push_back(std::move(a));
  }
  if (g.alternatives_.empty()) {
    return std::unexpected(Error{std::string(kWhat), std::string(pattern),
                                 "the pattern names no file (it is only '/' or './')", 0});
  }
  return g;
}

bool Glob::matches(std::string_view path) const {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (const Alternative& a : alternatives_) {
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
