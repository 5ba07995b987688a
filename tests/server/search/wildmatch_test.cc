// wildmatch against cases from git's own wildmatch tests (t3070): the first
// expectation is with pathname semantics ('*' stops at '/'), the second
// without.
#include "server/search/wildmatch.h"

#include <gtest/gtest.h>

namespace brig::search {
namespace {

struct Case {
  const char* text;
  const char* pattern;
  bool pathname;
  bool plain;
};

TEST(Wildmatch, GitCases) {
  const Case cases[] = {
      {"foo", "foo", true, true},
      {"foo", "bar", false, false},
      {"", "", true, true},
      {"foo", "???", true, true},
      {"foo", "??", false, false},
      {"foo", "*", true, true},
      {"foo", "f*", true, true},
      {"foo", "*f", false, false},
      {"foo", "*foo*", true, true},
      {"foobar", "*ob*a*r*", true, true},
      {"aaaaaaabababab", "*ab", true, true},
      {"foo*", "foo\\*", true, true},
      {"foobar", "foo\\*bar", false, false},
      {"f\\oo", "f\\\\oo", true, true},
      {"ball", "*[al]?", true, true},
      {"ten", "[ten]", false, false},
      {"ten", "**[!te]", true, true},
      {"ten", "**[!ten]", false, false},
      {"ten", "t[a-g]n", true, true},
      {"ten", "t[!a-g]n", false, false},
      {"ton", "t[!a-g]n", true, true},
      {"ton", "t[^a-g]n", true, true},
      {"a]b", "a[]]b", true, true},
      {"a-b", "a[]-]b", true, true},
      {"a]b", "a[]-]b", true, true},
      {"aab", "a[]-]b", false, false},
      {"aab", "a[]a-]b", true, true},
      {"]", "]", true, true},
      {"foo/baz/bar", "foo*bar", false, true},
      {"foo/baz/bar", "foo**bar", false, true},
      {"foobazbar", "foo**bar", true, true},
      {"foo/baz/bar", "foo/**/bar", true, true},
      {"foo/baz/bar", "foo/**/**/bar", true, false},
      {"foo/b/a/z/bar", "foo/**/bar", true, true},
      {"foo/b/a/z/bar", "foo/**/**/bar", true, true},
      {"foo/bar", "foo/**/bar", true, false},
      {"foo/bar", "foo/**/**/bar", true, false},
      {"foo/bar", "foo?bar", false, true},
      {"foo/bar", "foo[/]bar", false, true},
      {"foo/bar", "foo[^a-z]bar", false, true},
      {"foo/bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r", false, true},
      {"foo-bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r", true, true},
      {"foo", "**/foo", true, false},
      {"XXX/foo", "**/foo", true, true},
      {"bar/baz/foo", "**/foo", true, true},
      {"bar/baz/foo", "*/foo", false, true},
      {"foo/bar/baz", "**/bar*", false, true},
      {"deep/foo/bar/baz", "**/bar/*", true, true},
      {"deep/foo/bar/baz/", "**/bar/*", false, true},
      {"deep/foo/bar/baz/", "**/bar/**", true, true},
      {"deep/foo/bar", "**/bar/*", false, false},
      {"deep/foo/bar/", "**/bar/**", true, true},
      {"foo/bar/baz", "**/bar**", false, true},
      {"foo/bar/baz/x", "*/bar/**", true, true},
      {"deep/foo/bar/baz/x", "*/bar/**", false, true},
      {"deep/foo/bar/baz/x", "**/bar/*/*", true, true},
      {"a", "[[:alpha:]]", true, true},
      {"5", "[[:digit:]]", true, true},
      {"a", "[[:digit:]]", false, false},
      {"a", "[[:nope:]]", false, false},
      {"a", "[abc", false, false},
      {"a", "a\\", false, false},
      {"[", "[[]", true, true},
      {"-", "[a-]", true, true},
      {"abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", "**/*a*b*g*n*t", true, true},
      {"abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", "**/*a*b*g*n*t", false, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(wildmatch(c.pattern, c.text, true), c.pathname)
        << "pattern " << c.pattern << " text " << c.text << " (pathname)";
    EXPECT_EQ(wildmatch(c.pattern, c.text, false), c.plain)
        << "pattern " << c.pattern << " text " << c.text;
  }
}

TEST(Wildmatch, ManyStarsStayFast) {
  // Backtracking without git's aborts would take exponential time here; a
  // hang fails the test by its timeout.
  const std::string text(200, 'a');
  EXPECT_FALSE(wildmatch("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", text, true));
  EXPECT_FALSE(wildmatch("**/*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "x/y/" + text, true));
}

// Issue 15: matching recursed once per run of '*', so a pattern of many
// (from a call, or an ignore file a jail wrote) overflowed the stack.
TEST(Wildmatch, ManyStarRunsMatchNothingWithoutDeepRecursion) {
  std::string pattern;
  for (int i = 0; i < 200000; ++i) pattern += "*a";
  const std::string text(200000, 'a');
  EXPECT_FALSE(wildmatch(pattern, text, false));
  EXPECT_FALSE(wildmatch(pattern, text, true));
  EXPECT_EQ(star_runs(pattern), 200000u);
  EXPECT_EQ(star_runs("a**b\\*c*"), 2u);
  // Up to the bound, stars match as usual.
  std::string bounded;
  for (std::size_t i = 0; i < kMaxStarRuns; ++i) bounded += "*a";
  EXPECT_TRUE(wildmatch(bounded, std::string(kMaxStarRuns, 'a'), false));
}

TEST(Wildmatch, LiteralPatterns) {
  EXPECT_TRUE(is_literal_pattern("foo.c"));
  EXPECT_FALSE(is_literal_pattern("*.c"));
  EXPECT_FALSE(is_literal_pattern("a\\b"));
  EXPECT_FALSE(is_literal_pattern("[ab]"));
}

}  // namespace
}  // namespace brig::search
