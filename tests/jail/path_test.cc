// The one path module every layer's path decisions share: jail/, the
// policy, exec's cwd, the file tools' arguments and their denials.
#include "jail/base/path.h"

#include <gtest/gtest.h>

namespace brig {
namespace {

TEST(PathTest, WithinIsByWholeComponents) {
  EXPECT_TRUE(is_within("/a/b", "/a/b"));
  EXPECT_TRUE(is_within("/a/b/c", "/a/b"));
  EXPECT_TRUE(is_within("/a/b", "/a"));
  EXPECT_FALSE(is_within("/a/bc", "/a/b"));
  EXPECT_FALSE(is_within("/ab", "/a"));
  EXPECT_FALSE(is_within("/a", "/a/b"));
  EXPECT_TRUE(is_within("/anything", "/"));
  EXPECT_TRUE(is_within("/a", "/"));
  EXPECT_TRUE(is_within("/", "/"));
  EXPECT_FALSE(is_within("/a/b", "/a/b/"));  // parents are normalized: no trailing /
  static_assert(is_within("/home/u/.ssh", "/home/u"));
}

TEST(PathTest, NormalAbsoluteHasNoDotsEmptyNamesTrailingSlashOrNul) {
  for (const char* good : {"/", "/usr", "/a/b.c/..d", "/a/.b"})
    EXPECT_TRUE(is_normal_absolute(good)) << good;
  for (const char* bad :
       {"", "usr", "/usr/", "//usr", "/a//b", "/a/./b", "/a/../b", "/a/..", "/.", "/a/."})
    EXPECT_FALSE(is_normal_absolute(bad)) << bad;
  EXPECT_FALSE(is_normal_absolute(std::string_view("/a\0b", 4)));
}

TEST(PathTest, WithinTakesEmptyInputAsNothing) {
  EXPECT_FALSE(is_within("", "/a"));
  EXPECT_FALSE(is_within("/a", ""));  // an empty parent is no directory
  EXPECT_TRUE(is_within("", "/"));    // "/" holds everything, by definition
}

TEST(PathTest, NormalizeDropsDotsDoubledAndTrailingSlashes) {
  for (DotDot mode : {DotDot::keep, DotDot::resolve, DotDot::refuse}) {
    EXPECT_EQ(normalize("//usr/./lib//x/", mode), "/usr/lib/x");
    EXPECT_EQ(normalize("/", mode), "/");
    EXPECT_EQ(normalize("//", mode), "/");
    EXPECT_EQ(normalize("/./.", mode), "/");
    EXPECT_EQ(normalize("", mode), "/");                   // callers refuse empty input first
    EXPECT_EQ(normalize("/a/..b/.c", mode), "/a/..b/.c");  // names, not dots
  }
}

TEST(PathTest, NormalizeTreatsDotDotAsTheCallerAsks) {
  EXPECT_EQ(normalize("/w/../x", DotDot::keep), "/w/../x");
  EXPECT_EQ(normalize("/w/a/../../x", DotDot::resolve), "/x");
  EXPECT_EQ(normalize("/..", DotDot::resolve), "/");
  EXPECT_EQ(normalize("/../../etc", DotDot::resolve), "/etc");
  EXPECT_EQ(normalize("/a/b/..", DotDot::resolve), "/a");
  EXPECT_EQ(normalize("/a/../etc", DotDot::refuse), std::nullopt);
  EXPECT_EQ(normalize("/a/..", DotDot::refuse), std::nullopt);
  EXPECT_EQ(normalize("/a/b", DotDot::refuse), "/a/b");
}

TEST(PathTest, NormalizedWithoutKeepIsNormalAbsolute) {
  for (const char* raw : {"/", "//a//b/", "/a/./b/../c", "/../..", "/a/b/c/../../.."}) {
    const auto out = normalize(raw, DotDot::resolve);
    ASSERT_TRUE(out) << raw;
    EXPECT_TRUE(is_normal_absolute(*out)) << raw << " -> " << *out;
  }
}

TEST(PathTest, AbsoluteFromJoinsOnlyRelativePaths) {
  EXPECT_EQ(absolute_from("/w", "a/b"), "/w/a/b");
  EXPECT_EQ(absolute_from("/w", "/etc"), "/etc");
  EXPECT_EQ(absolute_from("/w", ""), "/w/");
  EXPECT_EQ(absolute_from("/", "a"), "//a");  // normalize() folds the "//"
}

TEST(PathTest, ParentAndName) {
  EXPECT_EQ(parent_of("/a/b"), "/a");
  EXPECT_EQ(parent_of("/a"), "/");
  EXPECT_EQ(parent_of("/"), "/");
  EXPECT_EQ(name_of("/a/b"), "b");
  EXPECT_EQ(name_of("/"), "");
}

}  // namespace
}  // namespace brig
