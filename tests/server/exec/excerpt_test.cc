#include "server/exec/excerpt.h"

#include <gtest/gtest.h>

namespace brig::exec {
namespace {

Spool with(const std::string& text, SpoolLimits limits = {}) {
  auto s = Spool::create("test", limits);
  EXPECT_TRUE(s.has_value());
  EXPECT_TRUE(s->append(text));
  return std::move(*s);
}

TEST(Excerpt, ShowsOutputThatFitsWhole) {
  Spool s = with("hello\nworld\n");
  Excerpt e = excerpt(s, 0, 100);
  EXPECT_EQ(e.head + e.tail, "hello\nworld\n");
  EXPECT_EQ(e.dropped, 0u);
  EXPECT_EQ(e.end, 12u);
  EXPECT_EQ(e.text("hint"), "hello\nworld\n");
}

TEST(Excerpt, StartsWhereTheLastResultStopped) {
  Spool s = with("hello\nworld\n");
  Excerpt e = excerpt(s, 6, 100);
  EXPECT_EQ(e.head, "world\n");
  EXPECT_EQ(excerpt(s, 12, 100).head, "");
}

TEST(Excerpt, KeepsHeadAndTailAndCountsTheRest) {
  std::string text = "HEAD" + std::string(1000, '.') + "TAIL";
  Spool s = with(text);
  Excerpt e = excerpt(s, 0, 8);
  EXPECT_EQ(e.head, "HEAD");
  EXPECT_EQ(e.tail, "TAIL");
  EXPECT_EQ(e.dropped, 1000u);
  EXPECT_EQ(e.gap_offset, 4u);
  const std::string shown = e.text("read with job");
  EXPECT_EQ(shown.find("HEAD\n[... 1000 bytes left out here, from offset 4; read with job"), 0u)
      << shown;
  EXPECT_EQ(shown.substr(shown.size() - 4), "TAIL");
}

TEST(Excerpt, CutsOnCharacterBoundariesAndRepairs) {
  // "é" is two bytes: a cut after 3 bytes would split the second one.
  std::string text = "aéé" + std::string(100, 'x') + "éé\xFF";
  Spool s = with(text);
  Excerpt e = excerpt(s, 0, 7);  // 3 bytes of head, 4 of tail
  EXPECT_EQ(e.head, "aé");
  // The last 4 bytes start with the second byte of an é: it goes, and the
  // invalid \xFF becomes U+FFFD.
  EXPECT_EQ(e.tail, "é\xEF\xBF\xBD");
  EXPECT_EQ(e.dropped, text.size() - 3 - 3);
  Excerpt split_head = excerpt(s, 0, 4);  // 2 bytes of head would split the first é
  EXPECT_EQ(split_head.head, "a");
}

TEST(Excerpt, BytesTheSpoolDroppedCountAsDropped) {
  std::string text = std::string(50, 'h') + std::string(100, 'm') + std::string(50, 't');
  Spool s = with(text, SpoolLimits{50, 50, nullptr});
  Excerpt e = excerpt(s, 120, 200);  // starts inside the spool's gap
  EXPECT_EQ(e.head, "");
  EXPECT_EQ(e.dropped, 80u);
  Excerpt all = excerpt(s, 0, 100);
  EXPECT_EQ(all.head, std::string(50, 'h'));
  EXPECT_EQ(all.tail, std::string(50, 't'));
  EXPECT_EQ(all.dropped, 100u);
}

}  // namespace
}  // namespace brig::exec
