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

std::uint64_t byte_bit(unsigned char c) {
  return std::uint64_t{1} << (c & 63);
}

std::uint64_t pair_bit(unsigned char a, unsigned char b) {
  return std::uint64_t{1} << ((b - 5u * a) & 63);
}

std::uint64_t bloom_bit(std::size_t length, char c) {
  return std::uint64_t{1} << ((length * 7 + static_cast<unsigned char>(c)) & 63);
}

bool is_wild(char c) {
  return !is_literal_pattern(std::string_view(&c, 1));
}

}  // namespace

IgnoreFile::Name::Name(std::string_view name) : name_(name) {
  unsigned char prev = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    grams_.bytes |= byte_bit(c);
    if (i > 0) grams_.pairs |= pair_bit(prev, c);
    prev = c;
  }
}

IgnoreFile::Sieve IgnoreFile::sieve(const Rule& r, bool dir_only, bool basename) {
  Sieve s;
  s.dir_only = dir_only;
  s.basename = basename;
  const std::string_view p = r.pattern;
  s.suffix = basename && p[0] == '*' && r.fixed == 0 && is_literal_pattern(p.substr(1));
  int prev = -1;  // the literal byte right before, if the last was one
  for (std::size_t i = 0; i < p.size(); ++i) {
    auto c = static_cast<unsigned char>(p[i]);
    // Past a '[' the bytes may be a class's: stop collecting there.
    if (c == '[') break;
    if (c == '*' || c == '?') {
      prev = -1;
      continue;
    }
    if (c == '\\') {
      if (++i == p.size()) break;
      c = static_cast<unsigned char>(p[i]);
    }
    if (c == '/') {
      prev = -1;
      continue;
    }
    s.needs.bytes |= byte_bit(c);
    if (prev >= 0) s.needs.pairs |= pair_bit(static_cast<unsigned char>(prev), c);
    prev = c;
  }
  if (p[0] == '\\' && p.size() > 1)
    s.first = static_cast<unsigned char>(p[1]);
  else if (!is_wild(p[0]))
    s.first = static_cast<unsigned char>(p[0]);
  // A pattern's last byte is a literal it must end with unless it is a
  // wildcard, an escape, or a class's closing ']' (an unterminated class
  // matches nothing, so its last byte may be taken at its word).
  if (!is_wild(p.back()) && p.back() != ']') s.last = static_cast<unsigned char>(p.back());
  return s;
}

bool IgnoreFile::admits(const Sieve& s, std::string_view subject, const Grams& has) {
  if (subject.empty()) return s.first < 0 && s.last < 0 && has.holds(s.needs);
  if (s.last >= 0 && static_cast<unsigned char>(subject.back()) != s.last) return false;
  if (s.first >= 0 && static_cast<unsigned char>(subject.front()) != s.first) return false;
  return has.holds(s.needs);
}

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
    bool dir_only = false;
    if (line.ends_with('/')) {
      dir_only = true;
      line.remove_suffix(1);
    }
    const bool basename = line.find('/') == std::string_view::npos;
    if (!basename && line.starts_with('/')) line.remove_prefix(1);
    if (line.empty()) continue;
    r.pattern = std::string(line);
    r.fixed = fixed_length(r.pattern);
    const Sieve sieve = IgnoreFile::sieve(r, dir_only, basename);
    const auto index = static_cast<std::uint32_t>(f.rules_.size());
    if (basename && r.fixed == r.pattern.size()) {
      f.by_name_[r.pattern].push_back(index);
      f.name_bloom_last_ |= bloom_bit(r.pattern.size(), r.pattern.back());
      f.name_bloom_first_ |= bloom_bit(r.pattern.size(), r.pattern.front());
    } else {
      (sieve.last < 0 ? f.any_last_ : f.by_last_).push_back(index);
    }
    f.rules_.push_back(std::move(r));
    f.sieves_.push_back(sieve);
  }
  std::reverse(f.any_last_.begin(), f.any_last_.end());
  if (!f.by_last_.empty()) {
    std::stable_sort(f.by_last_.begin(), f.by_last_.end(), [&](std::uint32_t x, std::uint32_t y) {
      const auto bx = f.sieves_[x].last, by = f.sieves_[y].last;
      return bx != by ? bx < by : x > y;
    });
    f.last_start_.assign(257, 0);
    for (const std::uint32_t i : f.by_last_)
      ++f.last_start_[static_cast<std::size_t>(f.sieves_[i].last) + 1];
    for (std::size_t b = 1; b < 257; ++b) f.last_start_[b] += f.last_start_[b - 1];
  }
  return f;
}

bool IgnoreFile::rule_matches(const Rule& r, bool basename, std::string_view path,
                              std::string_view name) const {
  if (basename) return wildmatch(r.pattern, name, /*pathname=*/false);
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
  return match(path, Name(last_component(path)), is_dir);
}

IgnoreVerdict IgnoreFile::match(std::string_view path, const Name& entry, bool is_dir) const {
  if (rules_.empty()) return IgnoreVerdict::none;
  const std::string_view name = entry.name_;
  // The last matching rule decides: find the highest index that matches.
  std::int64_t best = -1;
  const auto applies = [&](std::uint32_t i) { return is_dir || !sieves_[i].dir_only; };
  if (!name.empty() && (name_bloom_last_ & bloom_bit(name.size(), name.back())) != 0 &&
      (name_bloom_first_ & bloom_bit(name.size(), name.front())) != 0) {
    if (auto it = by_name_.find(name); it != by_name_.end()) {
      for (auto i = it->second.rbegin(); i != it->second.rend(); ++i) {
        if (applies(*i)) {
          best = std::max<std::int64_t>(best, *i);
          break;
        }
      }
    }
  }
  if (by_last_.empty() && any_last_.empty()) return verdict(best);
  // The path's grams are not collected: a path rule's sieve is its first
  // and last byte only (all ones pass every `needs`).
  static constexpr Grams kAll{~std::uint64_t{0}, ~std::uint64_t{0}};
  const auto decides = [&](std::uint32_t i) {
    const Sieve& s = sieves_[i];
    if (!is_dir && s.dir_only) return false;
    if (s.basename ? !admits(s, name, entry.grams_) : !admits(s, path, kAll)) return false;
    const Rule& r = rules_[i];
    if (s.suffix) return name.ends_with(std::string_view(r.pattern).substr(1));
    return rule_matches(r, s.basename, path, name);
  };
  // Both lists run highest index first: merge them, so the first rule that
  // matches is the last in the file, and stop at the by-name verdict.
  const std::uint32_t* bucket = nullptr;
  const std::uint32_t* bucket_end = nullptr;
  if (!by_last_.empty() && !path.empty()) {
    const auto b = static_cast<unsigned char>(path.back());
    bucket = by_last_.data() + last_start_[b];
    bucket_end = by_last_.data() + last_start_[b + 1];
  }
  const std::uint32_t* any = any_last_.data();
  const std::uint32_t* any_end = any + any_last_.size();
  while (bucket != bucket_end || any != any_end) {
    const bool from_bucket = any == any_end || (bucket != bucket_end && *bucket > *any);
    const std::uint32_t i = from_bucket ? *bucket++ : *any++;
    if (static_cast<std::int64_t>(i) <= best) break;
    if (decides(i)) {
      best = i;
      break;
    }
  }
  return verdict(best);
}

IgnoreVerdict IgnoreFile::verdict(std::int64_t rule) const {
  if (rule < 0) return IgnoreVerdict::none;
  return rules_[static_cast<std::size_t>(rule)].negated ? IgnoreVerdict::keep
                                                        : IgnoreVerdict::ignore;
}

}  // namespace brig::search
