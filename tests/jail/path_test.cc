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

}  // namespace
}  // namespace brig
