#include "server/policy/expand.h"

#include <gtest/gtest.h>

namespace brig::policy {
namespace {

class Expand : public ::testing::Test {
 protected:
  EnvMap env{{"PROJECT", "/srv/p"}, {"EMPTY", ""}};
  Expansion x{"/home/ada", env};
};

TEST_F(Expand, Tilde) {
  EXPECT_EQ(expand("~", x), "/home/ada");
  EXPECT_EQ(expand("~/.cache", x), "/home/ada/.cache");
  EXPECT_EQ(expand("/a/~/b", x), "/a/~/b");  // only a leading ~
  EXPECT_EQ(expand("~ada/x", x).error(),
            "\"~ada\": ~user is not supported; write the absolute path");
}

TEST_F(Expand, TildeNeedsAHome) {
  EnvMap none;
  Expansion homeless{"", none};
  EXPECT_EQ(expand("~/x", homeless).error(),
            "\"~\" needs a home directory, and none is known; write the absolute path");
}

TEST_F(Expand, Variables) {
  EXPECT_EQ(expand("$PROJECT/out", x), "/srv/p/out");
  EXPECT_EQ(expand("${PROJECT}x", x), "/srv/px");
  EXPECT_EQ(expand("a$EMPTY.b", x), "a.b");
  EXPECT_EQ(expand("cost: $$5", x), "cost: $5");
}

TEST_F(Expand, UnsetAndMalformedVariablesAreErrors) {
  EXPECT_EQ(expand("$NOPE/x", x).error(),
            "environment variable NOPE is not set; set it, or write the value without $NOPE");
  EXPECT_EQ(expand("a$", x).error(),
            "\"a$\": \"$\" must start a variable name ($NAME or ${NAME}); write \"$$\" for a "
            "literal \"$\"");
  EXPECT_EQ(expand("${PROJECT", x).error(), "\"${PROJECT\": \"${\" without a closing \"}\"");
  EXPECT_EQ(expand("${1X}", x).error(),
            "\"${1X}\": \"$\" must start a variable name ($NAME or ${NAME}); write \"$$\" for a "
            "literal \"$\"");
}

TEST_F(Expand, ValuesExpandTildeAfterColons) {
  EXPECT_EQ(expand_value("~/bin:/usr/bin:~/.cargo/bin", x),
            "/home/ada/bin:/usr/bin:/home/ada/.cargo/bin");
  EXPECT_EQ(expand("~/bin:~/x", x), "/home/ada/bin:~/x");
}

TEST(NormalizePath, MakesPathsNormal) {
  EXPECT_EQ(normalize_path("/usr/"), "/usr");
  EXPECT_EQ(normalize_path("//usr/./lib//x"), "/usr/lib/x");
  EXPECT_EQ(normalize_path("/"), "/");
  EXPECT_EQ(normalize_path("usr").error(),
            "\"usr\" is relative; write an absolute path, or start it with \"~/\" or \"$VAR/\"");
  EXPECT_EQ(normalize_path("/a/../etc").error(),
            "\"/a/../etc\" contains \"..\"; write the path without it");
  EXPECT_EQ(normalize_path("").error(), "an empty path; write an absolute path like \"/usr\"");
}

}  // namespace
}  // namespace brig::policy
