#include "server/exec/utf8_repair.h"

#include <gtest/gtest.h>

namespace brig::exec {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(RepairUtf8, KeepsValidText) {
  EXPECT_EQ(repair_utf8("plain ascii\n"), "plain ascii\n");
  EXPECT_EQ(repair_utf8("é € 😀"), "é € 😀");
  EXPECT_EQ(repair_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(RepairUtf8, ReplacesEachMaximalInvalidSubpart) {
  EXPECT_EQ(repair_utf8("a\xFF"
                        "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(repair_utf8("\x80\x80"), kFffd + kFffd);              // stray continuations
  EXPECT_EQ(repair_utf8("\xC0\xAF"), kFffd + kFffd);              // overlong: C0 never starts one
  EXPECT_EQ(repair_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // a surrogate
  EXPECT_EQ(repair_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(repair_utf8("\xE2\x82"
                        "x"),
            kFffd + "x");                         // truncated: one replacement
  EXPECT_EQ(repair_utf8("\xF0\x9F\x98"), kFffd);  // truncated at the end
}

TEST(CompletePrefix, HoldsBackOnlyAnUnfinishedCharacter) {
  EXPECT_EQ(complete_prefix_length("abc"), 3u);
  EXPECT_EQ(complete_prefix_length("ab\xE2\x82"), 2u);      // € missing its last byte
  EXPECT_EQ(complete_prefix_length("ab\xF0\x9F\x98"), 2u);  // 😀 missing one
  EXPECT_EQ(complete_prefix_length("ab\xE2\x82\xAC"), 5u);  // complete
  EXPECT_EQ(complete_prefix_length("ab\xFF"), 3u);          // invalid, nothing to wait for
  EXPECT_EQ(complete_prefix_length("ab\xE2"
                                   "x"),
            4u);  // already broken
  EXPECT_EQ(complete_prefix_length(""), 0u);
}

TEST(LeadingContinuation, SkipsToTheNextCharacter) {
  EXPECT_EQ(leading_continuation_bytes("\x82\xAC"
                                       "x"),
            2u);
  EXPECT_EQ(leading_continuation_bytes("x\x82"), 0u);
  EXPECT_EQ(leading_continuation_bytes("\x80\x80\x80\x80"), 3u);  // never more than 3
}

}  // namespace
}  // namespace brig::exec
