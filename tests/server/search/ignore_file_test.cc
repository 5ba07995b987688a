#include "server/search/ignore_file.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "server/search/wildmatch.h"

namespace brig::search {
namespace {

using V = IgnoreVerdict;

TEST(IgnoreFile, LastMatchingRuleDecides) {
  const IgnoreFile f = IgnoreFile::parse("*.log\n!keep.log\nkeep.log\n!*.log\n");
  EXPECT_EQ(f.match("a.log", false), V::keep);
  EXPECT_EQ(f.match("x.txt", false), V::none);
  const IgnoreFile g = IgnoreFile::parse("*.log\n!keep.log\n");
  EXPECT_EQ(g.match("sub/a.log", false), V::ignore);
  EXPECT_EQ(g.match("sub/keep.log", false), V::keep);
}

TEST(IgnoreFile, CommentsBlanksEscapesAndSpaces) {
  const IgnoreFile f =
      IgnoreFile::parse("\xef\xbb\xbf# comment\n\n\\#hash\n\\!bang\nspaced   \nkept\\ \r\n");
  EXPECT_EQ(f.size(), 4u);
  EXPECT_EQ(f.match("#hash", false), V::ignore);
  EXPECT_EQ(f.match("# comment", false), V::none);
  EXPECT_EQ(f.match("!bang", false), V::ignore);
  EXPECT_EQ(f.match("spaced", false), V::ignore);
  EXPECT_EQ(f.match("kept ", false), V::ignore);
  EXPECT_EQ(f.match("kept", false), V::none);
}

TEST(IgnoreFile, DirectoryOnlyRules) {
  const IgnoreFile f = IgnoreFile::parse("build/\n");
  EXPECT_EQ(f.match("build", true), V::ignore);
  EXPECT_EQ(f.match("src/build", true), V::ignore);
  EXPECT_EQ(f.match("build", false), V::none);
}

TEST(IgnoreFile, AnchoredAndMiddleSlash) {
  const IgnoreFile f = IgnoreFile::parse("/top\ndoc/*.txt\n");
  EXPECT_EQ(f.match("top", false), V::ignore);
  EXPECT_EQ(f.match("sub/top", false), V::none);
  EXPECT_EQ(f.match("doc/a.txt", false), V::ignore);
  EXPECT_EQ(f.match("doc/x/a.txt", false), V::none);
  EXPECT_EQ(f.match("sub/doc/a.txt", false), V::none);
}

TEST(IgnoreFile, DoubleStar) {
  const IgnoreFile f = IgnoreFile::parse("**/cache\nlogs/**\na/**/b\n");
  EXPECT_EQ(f.match("cache", true), V::ignore);
  EXPECT_EQ(f.match("x/y/cache", false), V::ignore);
  EXPECT_EQ(f.match("logs/x/y", false), V::ignore);
  EXPECT_EQ(f.match("logs", true), V::none);
  EXPECT_EQ(f.match("a/b", false), V::ignore);
  EXPECT_EQ(f.match("a/x/y/b", false), V::ignore);
}

TEST(IgnoreFile, FastPathsAgreeWithRuleOrder) {
  // A name rule, a suffix rule and a general rule interleaved: the highest
  // numbered match wins whichever index found it.
  const IgnoreFile f = IgnoreFile::parse("*.o\n!main.o\nm[a]in.o\n!*.o\nmain.o\n");
  EXPECT_EQ(f.match("main.o", false), V::ignore);
  EXPECT_EQ(f.match("other.o", false), V::keep);
  const IgnoreFile g = IgnoreFile::parse("main.o\n*.o\n!m*.o\n");
  EXPECT_EQ(g.match("main.o", false), V::keep);
  EXPECT_EQ(g.match("x.o", false), V::ignore);
}

TEST(IgnoreFile, SievesSeeEscapesClassesAndStars) {
  // Each rule is turned away early by the bytes a subject must hold or start
  // or end with; none of these may turn away a subject the rule matches.
  const IgnoreFile f = IgnoreFile::parse("\\#*#\n*.[ch]\n[ab]c\nx\\*\n*q\\?\na*b\n/**/deep\n");
  EXPECT_EQ(f.match("#x#", false), V::ignore);
  EXPECT_EQ(f.match("y.h", false), V::ignore);
  EXPECT_EQ(f.match("bc", false), V::ignore);
  EXPECT_EQ(f.match("x*", false), V::ignore);
  EXPECT_EQ(f.match("xa", false), V::none);
  EXPECT_EQ(f.match("zq?", false), V::ignore);
  EXPECT_EQ(f.match("zqa", false), V::none);
  EXPECT_EQ(f.match("ab", false), V::ignore);  // no "ab" pair is needed across a star
  EXPECT_EQ(f.match("a--b", false), V::ignore);
  EXPECT_EQ(f.match("deep", false), V::ignore);  // "**/" matches no directory
  EXPECT_EQ(f.match("s/t/deep", false), V::ignore);
  // Bytes that share a sieve bit (byte & 63) are still told apart by the
  // matcher.
  const IgnoreFile g = IgnoreFile::parse("*a\n");
  EXPECT_EQ(g.match("x!", false), V::none);
  EXPECT_EQ(g.match("x\xe1", false), V::none);
  EXPECT_EQ(g.match("xa", false), V::ignore);
}

// A rule's meaning without any speed-up: the matcher alone, as git's
// match_basename and match_pathname (the generated rules put no "**" right
// after a fixed prefix, where match_pathname differs from one wildmatch).
bool rule_matches_slowly(std::string pattern, const std::string& path, bool is_dir) {
  if (pattern.size() > 1 && pattern.back() == '/') {
    if (!is_dir) return false;
    pattern.pop_back();
  }
  if (pattern.find('/') == std::string::npos) {
    const std::size_t slash = path.rfind('/');
    return wildmatch(pattern, slash == std::string::npos ? path : path.substr(slash + 1), false);
  }
  if (pattern[0] == '/') pattern.erase(0, 1);
  return wildmatch(pattern, path, true);
}

TEST(IgnoreFile, SpeedUpsNeverChangeAVerdict) {
  // Random rule files (plain names, suffixes, classes, escapes, stars,
  // negations, directory-only and anchored rules) against random paths over
  // bytes that collide in the sieves' bit sets: every verdict must be the
  // last matching rule's, as the matcher alone decides it.
  std::mt19937 rng(16);
  const std::vector<std::string> parts = {"a",    "b",    "c",   ".",   "!", "\xe1",
                                          "a.",   ".o",   "ab",  "*",   "?", "[ab]",
                                          "[!a]", "[]a]", "\\*", "\\a", "**"};
  const std::vector<std::string> bytes = {"a", "b", "c", ".", "!", "\xe1", "*", "o", "]"};
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)];
  };
  std::size_t matched = 0;
  for (int file = 0; file < 400; ++file) {
    std::vector<std::string> rules;
    std::string text;
    const int n = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int r = 0; r < n; ++r) {
      std::string pattern;
      const int len = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int i = 0; i < len; ++i) pattern += pick(parts);
      const bool anchored = rng() % 4 == 0;
      if (anchored) {
        // No "**" at all: see rule_matches_slowly.
        std::string flat;
        for (std::size_t i = 0; i < pattern.size(); ++i)
          if (!(pattern[i] == '*' && i + 1 < pattern.size() && pattern[i + 1] == '*'))
            flat += pattern[i];
        pattern = "/" + flat + (rng() % 2 ? "/" + pick(bytes) : "");
      }
      if (pattern[0] == '!' || pattern[0] == '#') pattern = "\\" + pattern;
      if (rng() % 5 == 0) pattern += "/";
      const bool negated = rng() % 4 == 0;
      rules.push_back(pattern);
      text += (negated ? "!" : "") + pattern + "\n";
      if (negated) rules.back().insert(0, "!");
    }
    const IgnoreFile f = IgnoreFile::parse(text);
    for (int p = 0; p < 40; ++p) {
      std::string path;
      const int components = std::uniform_int_distribution<int>(1, 2)(rng);
      for (int c = 0; c < components; ++c) {
        if (c > 0) path += "/";
        const int len = std::uniform_int_distribution<int>(1, 5)(rng);
        for (int i = 0; i < len; ++i) path += pick(bytes);
      }
      const bool is_dir = rng() % 2 == 0;
      V expected = V::none;
      for (const std::string& rule : rules) {
        const bool negated = rule[0] == '!';
        if (rule_matches_slowly(negated ? rule.substr(1) : rule, path, is_dir))
          expected = negated ? V::keep : V::ignore;
      }
      if (expected != V::none) ++matched;
      ASSERT_EQ(f.match(path, is_dir), expected) << "rules:\n" << text << "path: " << path;
    }
  }
  // The generator must reach the matches it is there to check.
  EXPECT_GT(matched, 1000u);
}

}  // namespace
}  // namespace brig::search
