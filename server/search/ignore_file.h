// One .gitignore-style file (.gitignore, .ignore, .git/info/exclude): its
// rules, and which of them decides a path. The semantics are git's
// (gitignore(5), dir.c); the walk in tree_walk.h decides which files apply.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace brig::search {

enum class IgnoreVerdict : std::uint8_t {
  none,    // no rule matches: a less specific file decides
  ignore,  // the last matching rule ignores the path
  keep,    // the last matching rule is a negation (!pattern)
};

class IgnoreFile {
 public:
  // Parses a file's text. Per line: a leading UTF-8 BOM and a trailing '\r'
  // are dropped; blank lines and lines starting with '#' are skipped;
  // trailing spaces go unless escaped ("\ "); '!' negates; a trailing '/'
  // limits the rule to directories; a rule with another '/' (leading or in
  // the middle) is anchored to the file's directory, and one without
  // matches a name at any depth below it. "\#" and "\!" start a rule with
  // those bytes.
  static IgnoreFile parse(std::string_view text);

  // The verdict of the last rule that matches `path`, which is relative to
  // the directory holding the file ("src/a.o"); is_dir says whether it
  // names a directory (a symlink to one is not).
  IgnoreVerdict match(std::string_view path, bool is_dir) const;

  bool empty() const { return rules_.empty(); }
  std::size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    std::string pattern;    // without '!', the trailing '/' and a leading '/'
    std::size_t fixed = 0;  // leading bytes without a wildcard (git's nowildcardlen)
    bool negated = false;
    bool dir_only = false;
    bool basename = false;  // no '/': matches the last component
  };
  bool rule_matches(const Rule& r, std::string_view path, std::string_view name) const;

  std::vector<Rule> rules_;
  // Speed-ups over the same rules, each list in rule order: basename rules
  // that are plain names (looked up by name), "*suffix" basename rules (a
  // suffix compare), and all others (wildmatch).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<std::uint32_t>, NameHash, std::equal_to<>> by_name_;
  std::vector<std::uint32_t> suffix_rules_;
  std::vector<std::uint32_t> other_rules_;
};

}  // namespace brig::search
