#include "server/search/glob.h"

#include <gtest/gtest.h>

#include "server/search/wildmatch.h"

namespace brig::search {
namespace {

using Strings = std::vector<std::string>;

TEST(Braces, ExpandNestedAndKeepEscapesAndClasses) {
  EXPECT_EQ(*expand_braces("src/{a,b}/*"), (Strings{"src/a/*", "src/b/*"}));
  EXPECT_EQ(*expand_braces("*.{c,h{,pp}}"), (Strings{"*.c", "*.h", "*.hpp"}));
  EXPECT_EQ(*expand_braces("{a,b}{1,2}"), (Strings{"a1", "a2", "b1", "b2"}));
  EXPECT_EQ(*expand_braces("x\\{a,b}"), (Strings{"x\\{a,b}"}));
  EXPECT_EQ(*expand_braces("[{]x"), (Strings{"[{]x"}));
  EXPECT_EQ(*expand_braces("plain"), (Strings{"plain"}));
}

TEST(Braces, ErrorsNameTheProblem) {
  auto open = expand_braces("src/{a,b");
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().why.find("never closed"), std::string::npos);
  EXPECT_EQ(*expand_braces("a}b"), (Strings{"a}b"}));
  // 2^9 = 512 alternatives is over the cap.
  auto many = expand_braces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}");
  ASSERT_FALSE(many);
  EXPECT_NE(many.error().why.find("alternatives"), std::string::npos);
}

// Issue 15: {x20,000 (closed again) killed the file worker: the expansion
// recursed once per level and copied the pattern at each.
TEST(Braces, NestingAndGroupsAreBoundedBeforeExpanding) {
  const std::string deep = std::string(20000, '{') + "a" + std::string(20000, '}');
  auto r = expand_braces(deep);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("nest more than 10 deep"), std::string::npos) << r.error().why;
  EXPECT_LT(r.error().where.size(), 300u) << "the message quotes the whole pattern";
  auto compiled = Glob::compile(deep);
  ASSERT_FALSE(compiled);

  std::string groups;
  for (int i = 0; i < 20000; ++i) groups += "{a}";
  auto flat = expand_braces(groups);
  ASSERT_FALSE(flat);
  EXPECT_NE(flat.error().why.find("more than 64 brace groups"), std::string::npos)
      << flat.error().why;

  // Ten levels still expand, in order.
  std::string ten = "x";
  for (int i = 0; i < 10; ++i) ten = "{" + ten + ",y}";
  auto ok = expand_braces(ten);
  ASSERT_TRUE(ok) << ok.error().to_string();
  ASSERT_EQ(ok->size(), 11u);
  EXPECT_EQ(ok->front(), "x");
  EXPECT_EQ(ok->back(), "y");
}

TEST(Glob, TooManyStarsAreRefusedSayingSo) {
  std::string stars;
  for (std::size_t i = 0; i <= kMaxStarRuns; ++i) stars += "*a";
  auto r = Glob::compile(stars);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("runs of '*'"), std::string::npos) << r.error().why;
  EXPECT_TRUE(Glob::compile(stars.substr(2)));
}

TEST(Glob, NameGlobsMatchAtAnyDepth) {
  const Glob g = *Glob::compile("*.cpp");
  EXPECT_TRUE(g.matches("a.cpp"));
  EXPECT_TRUE(g.matches("src/deep/b.cpp"));
  EXPECT_FALSE(g.matches("src/b.cpp.orig"));
  EXPECT_TRUE(g.may_match_below("anything"));
}

TEST(Glob, PathGlobs) {
  const Glob all = *Glob::compile("**/*.cpp");
  EXPECT_TRUE(all.matches("a.cpp"));
  EXPECT_TRUE(all.matches("x/y/a.cpp"));
  const Glob alt = *Glob::compile("src/{a,b}/*");
  EXPECT_TRUE(alt.matches("src/a/x.h"));
  EXPECT_TRUE(alt.matches("src/b/y"));
  EXPECT_FALSE(alt.matches("src/c/x.h"));
  EXPECT_FALSE(alt.matches("src/a/deeper/x.h"));  // '*' stays in one component
  EXPECT_TRUE(alt.may_match_below("src"));
  EXPECT_TRUE(alt.may_match_below("src/a"));
  EXPECT_FALSE(alt.may_match_below("lib"));
  EXPECT_FALSE(alt.may_match_below("srcx"));
  const Glob q = *Glob::compile("file?.[ch]");
  EXPECT_TRUE(q.matches("dir/file1.c"));
  EXPECT_FALSE(q.matches("dir/file10.c"));
}

// "**/*.c" is matched on the name alone and "*.c" by a suffix compare: both
// short cuts give wildmatch's answer on the whole path.
TEST(Glob, ShortCutsAgreeWithWildmatch) {
  const std::vector<std::string> paths = {"a.c",   "x/y/a.c", ".c",     "x/.c", "a.cc",
                                          "a.c/b", "x/a.c/b", "dir/ac", "c",    "x/y/a.h"};
  for (const char* pattern : {"**/*.c", "**/.c", "**/a*", "**/**"}) {
    const Glob g = *Glob::compile(pattern);
    for (const std::string& p : paths)
      EXPECT_EQ(g.matches(p), wildmatch(pattern, p, /*pathname=*/true)) << pattern << " " << p;
  }
  const Glob suffix = *Glob::compile("*.c");
  for (const std::string& p : paths) {
    const std::string name = p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
    EXPECT_EQ(suffix.matches(p), wildmatch("*.c", name, /*pathname=*/false)) << p;
  }
}

TEST(Glob, AnchorsAndTrailingSlash) {
  const Glob anchored = *Glob::compile("/top.txt");
  EXPECT_TRUE(anchored.matches("top.txt"));
  EXPECT_FALSE(anchored.matches("sub/top.txt"));
  EXPECT_TRUE(Glob::compile("./src/*.c")->matches("src/x.c"));
  const Glob dir = *Glob::compile("build/");
  EXPECT_TRUE(dir.matches("build/a/b.o"));
  EXPECT_FALSE(dir.matches("build"));
  EXPECT_FALSE(Glob::compile(""));
  EXPECT_FALSE(Glob::compile("/"));
}

TEST(Glob, WholeDirectories) {
  EXPECT_TRUE(Glob::compile("build")->matches_dir("a/build"));
  EXPECT_TRUE(Glob::compile("tests/")->matches_dir("tests"));
  EXPECT_FALSE(Glob::compile("tests/")->matches_dir("a/tests"));
  EXPECT_TRUE(Glob::compile("src/**")->matches_dir("src"));
  EXPECT_TRUE(Glob::compile("**/gen/**")->matches_dir("x/gen"));
  EXPECT_FALSE(Glob::compile("*.c")->matches_dir("src"));
}

TEST(Glob, NamesHidden) {
  EXPECT_TRUE(Glob::compile(".github/**")->names_hidden());
  EXPECT_TRUE(Glob::compile("src/.env")->names_hidden());
  EXPECT_TRUE(Glob::compile("{a,.b}/x")->names_hidden());
  EXPECT_FALSE(Glob::compile("./src/*.c")->names_hidden());
  EXPECT_FALSE(Glob::compile("**/*.c")->names_hidden());
}

TEST(GlobSet, AnyMatches) {
  const GlobSet s = *GlobSet::compile({"*.c", "docs/**"});
  EXPECT_TRUE(s.matches("x/y.c"));
  EXPECT_TRUE(s.matches("docs/a/b.md"));
  EXPECT_FALSE(s.matches("x/y.h"));
  EXPECT_TRUE(GlobSet::compile({})->empty());
  EXPECT_FALSE(GlobSet::compile({"ok", "{bad"}));
}

}  // namespace
}  // namespace brig::search
