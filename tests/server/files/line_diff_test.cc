#include "server/files/line_diff.h"

#include <string>

#include <gtest/gtest.h>

namespace brig::files {
namespace {

std::string lines(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += std::to_string(i) + "\n";
  return s;
}

TEST(LineDiff, EqualTextsHaveNoDiff) {
  EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n", "x", "y").text, "");
}

TEST(LineDiff, SeparateChangesMakeSeparateHunks) {
  std::string after = lines(1, 20);
  after.replace(after.find("2\n"), 2, "two\n");
  after.replace(after.find("18\n"), 3, "eighteen\n");
  const Diff d = unified_diff(lines(1, 20), after, "a/f", "b/f");
  EXPECT_EQ(d.text,
            "--- a/f\n+++ b/f\n"
            "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
            "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n");
  EXPECT_EQ(d.stats.added, 2u);
  EXPECT_EQ(d.stats.removed, 2u);
}

TEST(LineDiff, ChangesWithinSixLinesShareAHunk) {
  std::string after = lines(1, 12);
  after.replace(after.find("3\n"), 2, "x\n");
  after.replace(after.find("9\n"), 2, "y\n");
  const Diff d = unified_diff(lines(1, 12), after, "f", "f");
  EXPECT_EQ(d.text,
            "--- f\n+++ f\n@@ -1,12 +1,12 @@\n 1\n 2\n-3\n+x\n 4\n 5\n 6\n 7\n 8\n-9\n+y\n 10\n"
            " 11\n 12\n");
}

TEST(LineDiff, InsertionIntoEmptyAndMissingNewline) {
  EXPECT_EQ(unified_diff("", "a\n", "f", "f").text, "--- f\n+++ f\n@@ -0,0 +1 @@\n+a\n");
  EXPECT_EQ(unified_diff("a\n", "a", "f", "f").text,
            "--- f\n+++ f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n");
}

TEST(LineDiff, PureDeletionInTheMiddle) {
  EXPECT_EQ(unified_diff(lines(1, 9), lines(1, 4) + lines(6, 9), "f", "f").text,
            "--- f\n+++ f\n@@ -2,7 +2,6 @@\n 2\n 3\n 4\n-5\n 6\n 7\n 8\n");
}

TEST(LineDiff, MinimalScriptKeepsCommonLines) {
  const Diff d = unified_diff("a\nb\nc\na\nb\nb\na\n", "c\nb\na\nb\na\nc\n", "f", "f");
  // Myers' classic example: edit distance 5.
  EXPECT_EQ(d.stats.added + d.stats.removed, 5u);
}

TEST(LineDiff, HugeRewriteFallsBackToABlock) {
  std::string before, after;
  for (int i = 0; i < 5000; ++i) {
    before += "old " + std::to_string(i) + "\n";
    after += "new " + std::to_string(i) + "\n";
  }
  const Diff d = unified_diff(before, after, "f", "f");
  EXPECT_EQ(d.stats.removed, 5000u);
  EXPECT_EQ(d.stats.added, 5000u);
}

}  // namespace
}  // namespace brig::files
