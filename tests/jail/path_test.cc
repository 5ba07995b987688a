// is_within: the one definition every layer's path decisions share.
#include "jail/base/path.h"

#include <gtest/gtest.h>

namespace brig {
namespace {

TEST(PathTest, WithinIsByWholeComponents) {
  EXPECT_TRUE(is_within("/a/b", "/a/b"));
  EXPECT_TRUE(is_within("/a/b/c", "/a/b"));
  EXPECT_FALSE(is_within("/a/bc", "/a/b"));
  EXPECT_FALSE(is_within("/a", "/a/b"));
  EXPECT_TRUE(is_within("/anything", "/"));
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

}  // namespace
}  // namespace brig
