#include "server/search/ignore_file.h"

#include <algorithm>

#include "server/search/wildmatch.h"

namespace brig::search {
namespace {

// git's trim_trailing_spaces: spaces at the end go, unless the first of them
// is escaped with a backslash.
std::string_view trim_trailing_spaces(std::string_view line) {
  std::size_t last_space = std::string_view::npos;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == ' ') {
      if (last_space == std::string_view::npos) last_space = i;
    } else if (line[i] == '\\') {
      if (++i == line.size()) return line;
      last_space = std::string_view::npos;
    } else {
      last_space = std::string_view::npos;
    }
  }
  return last_space == std::string_view::npos ? line : line.substr(0, last_space);
}

// Bytes before the first wildcard or escape.
std::size_t fixed_length(std::string_view pattern) {
  std::size_t i = 0;
  while (i < pattern.size() && is_literal_pattern(pattern.substr(i, 1))) ++i;
  return i;
}

std::string_view last_component(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

IgnoreFile IgnoreFile::parse(std::string_view text) {
  IgnoreFile f;
  if (text.starts_with("\xef\xbb\xbf")) text.remove_prefix(3);
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line[0] == '#') continue;
    if (line.ends_with('\r')) line.remove_suffix(1);
    line = trim_trailing_spaces(line);
    if (line.empty()) continue;
    Rule r;
    if (line[0] == '!') {
      r.negated = true;
      line.remove_prefix(1);
    }
    if (line.ends_with('/')) {
      r.dir_only = true;
      line.remove_suffix(1);
    }
    r.basename = line.find('/') == std::string_view::npos;
    if (!r.basename && line.starts_with('/')) line.remove_prefix(1);
    if (line.empty()) continue;
    r.pattern = std::string(line);
    r.fixed = fixed_length(r.pattern);
    const auto index = static_cast<std::uint32_t>(f.rules_.size());
    if (r.basename && r.fixed == r.pattern.size()) {
      f.by_name_[r.pattern].push_back(index);
    } else if (r.basename && r.pattern[0] == '*' && r.fixed == 0 &&
               is_literal_pattern(std::string_view(r.pattern).substr(1))) {
      f.suffix_rules_.push_back(index);
    } else {
      f.other_rules_.push_back(index);
    }
    f.rules_.push_back(std::move(r));
  }
  return f;
}

bool IgnoreFile::rule_matches(const Rule& r, std::string_view path, std::string_view name) const {
  if (r.basename) return wildmatch(r.pattern, name, /*pathname=*/false);
  // As git's match_pathname: the fixed prefix is compared bytewise and only
  // the rest goes to wildmatch, so a "**" right after the prefix counts as
  // starting a component.
  if (r.fixed > path.size()) return false;
  if (std::string_view(r.pattern).substr(0, r.fixed) != path.substr(0, r.fixed)) return false;
  const std::string_view rest_pattern = std::string_view(r.pattern).substr(r.fixed);
  const std::string_view rest_path = path.substr(r.fixed);
  if (rest_pattern.empty()) return rest_path.empty();
  return wildmatch(rest_pattern, rest_path, /*pathname=*/true);
}

IgnoreVerdict IgnoreFile::match(std::string_view path, bool is_dir) const {
  if (rules_.empty()) return IgnoreVerdict::none;
  const std::string_view name = last_component(path);
  // The last matching rule decides: find the highest index that matches.
  std::int64_t best = -1;
  const auto applies = [&](std::uint32_t i) { return is_dir || !rules_[i].dir_only; };
  if (!by_name_.empty()) {
    if (auto it = by_name_.find(name); it != by_name_.end()) {
      for (auto i = it->second.rbegin(); i != it->second.rend(); ++i) {
        if (applies(*i)) {
          best = std::max<std::int64_t>(best, *i);
          break;
        }
      }
    }
  }
  for (auto i = suffix_rules_.rbegin(); i != suffix_rules_.rend(); ++i) {
    if (static_cast<std::int64_t>(*i) <= best) break;
    const std::string_view suffix = std::string_view(rules_[*i].pattern).substr(1);
    if (applies(*i) && name.ends_with(suffix)) {
      best = *i;
      break;
    }
  }
  for (auto i = other_rules_.rbegin(); i != other_rules_.rend(); ++i) {
    if (static_cast<std::int64_t>(*i) <= best) break;
    if (applies(*i) && rule_matches(rules_[*i], path, name)) {
      best = *i;
      break;
    }
  }
  if (best < 0) return IgnoreVerdict::none;
  return rules_[static_cast<std::size_t>(best)].negated ? IgnoreVerdict::keep
                                                        : IgnoreVerdict::ignore;
}

}  // namespace brig::search
