#include "server/search/ignore_file.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace brig::search
