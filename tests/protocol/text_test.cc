#include "protocol/text.h"

#include <gtest/gtest.h>

namespace brig::protocol {
namespace {

TEST(Clip, ShortTextUnchanged) {
  EXPECT_EQ(clip("abc", 3), "abc");
  EXPECT_EQ(clip("", 0), "");
}

TEST(Clip, LongTextCutWithEllipsis) {
  EXPECT_EQ(clip("abcdefgh", 6), "abc...");
  EXPECT_EQ(clip("abcdefgh", 2), "...");
}

TEST(Clip, NeverSplitsAUtf8Sequence) {
  // "aé€€" = 61 C3A9 E282AC E282AC: keeping 5 bytes would split the first euro sign.
  EXPECT_EQ(clip("a\xC3\xA9\xE2\x82\xAC\xE2\x82\xAC", 8), "a\xC3\xA9...");
  EXPECT_EQ(clip("\xE2\x82\xAC\xE2\x82\xAC", 5), "...");
}

}  // namespace
}  // namespace brig::protocol
