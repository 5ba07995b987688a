#include "server/exec/spool.h"

#include <gtest/gtest.h>

#include <string>

namespace brig::exec {
namespace {

// Bytes whose value says where they are: a misplaced read shows.
std::string pattern(std::uint64_t from, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (from + i) % 26);
  return s;
}

Spool make(std::uint64_t head, std::size_t tail) {
  auto s = Spool::create("test", SpoolLimits{head, tail, nullptr});
  EXPECT_TRUE(s.has_value());
  return std::move(*s);
}

TEST(Spool, KeepsEverythingWithinTheLimits) {
  Spool s = make(100, 10);
  ASSERT_TRUE(s.append(pattern(0, 30)));
  ASSERT_TRUE(s.append(pattern(30, 40)));
  EXPECT_EQ(s.size(), 70u);
  EXPECT_EQ(*s.read(0, 1000), pattern(0, 70));
  EXPECT_EQ(*s.read(25, 10), pattern(25, 10));
  EXPECT_EQ(*s.read(70, 10), "");
  EXPECT_EQ(*s.read(500, 10), "");
}

TEST(Spool, ForgetsTheMiddleOfAFlood) {
  Spool s = make(20, 10);
  for (std::uint64_t at = 0; at < 1000; at += 7) ASSERT_TRUE(s.append(pattern(at, 7)));
  const std::uint64_t size = s.size();
  EXPECT_EQ(size, 1001u);
  EXPECT_EQ(s.head_end(), 20u);
  EXPECT_EQ(s.tail_begin(), size - 10);
  EXPECT_EQ(*s.read(0, 100), pattern(0, 20));  // stops at the gap
  EXPECT_EQ(*s.read(size - 10, 100), pattern(size - 10, 10));
  EXPECT_EQ(*s.read(size - 4, 2), pattern(size - 4, 2));
  auto gap = s.read(500, 10);
  ASSERT_FALSE(gap.has_value());
  EXPECT_NE(gap.error().why.find("were not kept"), std::string::npos) << gap.error().why;
}

TEST(Spool, AnAppendLargerThanTheRingKeepsItsEnd) {
  Spool s = make(5, 8);
  ASSERT_TRUE(s.append(pattern(0, 3)));
  ASSERT_TRUE(s.append(pattern(3, 50)));
  EXPECT_EQ(*s.read(0, 100), pattern(0, 5));
  EXPECT_EQ(*s.read(45, 100), pattern(45, 8));
}

TEST(Spool, HeadAndTailThatMeetReadAsOne) {
  Spool s = make(10, 10);
  ASSERT_TRUE(s.append(pattern(0, 18)));
  EXPECT_EQ(*s.read(0, 100), pattern(0, 18));
  EXPECT_EQ(*s.read(9, 100), pattern(9, 9));
}

}  // namespace
}  // namespace brig::exec
