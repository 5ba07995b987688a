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

  // Bytes (as byte & 63) and adjacent byte pairs (hashed to 0-63) as two
  // bit sets: what a subject holds, or what a rule needs it to hold.
  struct Grams {
    std::uint64_t bytes = 0;
    std::uint64_t pairs = 0;
    bool holds(const Grams& need) const {
      return (need.bytes & ~bytes) == 0 && (need.pairs & ~pairs) == 0;
    }
  };
  // An entry's name as the rules look at it, made once for all the ignore
  // files that judge the entry. Views `name`, which must outlive it.
  class Name {
   public:
    explicit Name(std::string_view name);

   private:
    friend class IgnoreFile;
    std::string_view name_;
    Grams grams_;
  };

  // The verdict of the last rule that matches `path`, which is relative to
  // the directory holding the file ("src/a.o"); is_dir says whether it
  // names a directory (a symlink to one is not).
  IgnoreVerdict match(std::string_view path, bool is_dir) const;
  // The same, with the path's last component made into a Name already.
  IgnoreVerdict match(std::string_view path, const Name& name, bool is_dir) const;

  bool empty() const { return rules_.empty(); }
  std::size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    std::string pattern;    // without '!', the trailing '/' and a leading '/'
    std::size_t fixed = 0;  // leading bytes without a wildcard (git's nowildcardlen)
    bool negated = false;
  };
  // What every subject a rule matches (the name for a basename rule, else
  // the path) has, tested before the matcher: most entries of a walk match
  // no rule, and these tests turn most of them away in a few instructions.
  // Kept apart from the rules so that the tests run over a small array.
  struct Sieve {
    // The bytes and adjacent byte pairs the pattern holds literally (before
    // any '['; '/' aside, as "**/" matches none).
    Grams needs;
    // The byte the subject starts or ends with, when the pattern fixes it,
    // else -1.
    std::int16_t first = -1;
    std::int16_t last = -1;
    bool dir_only = false;
    bool basename = false;  // no '/': matches the last component
    bool suffix = false;    // "*suffix" basename rule: a suffix compare
  };
  static Sieve sieve(const Rule& r, bool dir_only, bool basename);
  static bool admits(const Sieve& s, std::string_view subject, const Grams& has);
  // The verdict of rule index `rule`, none when it is negative.
  IgnoreVerdict verdict(std::int64_t rule) const;
  bool rule_matches(const Rule& r, bool basename, std::string_view path,
                    std::string_view name) const;

  std::vector<Rule> rules_;
  std::vector<Sieve> sieves_;  // one per rule
  // Speed-ups over the same rules. Basename rules that are plain names are
  // looked up by name. The others are bucketed by the byte a subject must
  // end with (a path ends with its name, so one byte serves both kinds):
  // by_last_ holds their indices grouped by that byte, each group highest
  // index first, last_start_[b] where byte b's group starts (257 entries);
  // any_last_ holds, highest first, the rules whose last byte is a
  // wildcard. "*suffix" basename rules are compared as suffixes; all others
  // go to wildmatch.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::vector<std::uint32_t>, NameHash, std::equal_to<>> by_name_;
  // Two one-word Bloom filters over by_name_'s names, by (length, last
  // byte) and (length, first byte): a name missing from either is not
  // hashed.
  std::uint64_t name_bloom_last_ = 0;
  std::uint64_t name_bloom_first_ = 0;
  std::vector<std::uint32_t> by_last_;
  std::vector<std::uint32_t> last_start_;
  std::vector<std::uint32_t> any_last_;
};

}  // namespace brig::search
