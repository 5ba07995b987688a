#include "server/files/edit_file.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "server/files/text_edit.h"
#include "tests/server/files/temp_dir.h"

namespace brig::files {
namespace {

using protocol::Json;
using testing::context_for;
using testing::TempDir;

Json edit(std::string old_text, std::string new_text, bool replace_all = false) {
  return Json{{"old_text", old_text}, {"new_text", new_text}, {"replace_all", replace_all}};
}

TEST(EditFile, ReplacesOnceAndReturnsADiff) {
  TempDir dir;
  dir.write("a.txt", "alpha\nbeta\ngamma\n");
  auto r =
      edit_file_op(Json{{"path", "a.txt"}, {"edits", {edit("beta", "BETA")}}}, context_for(dir));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(dir.read("a.txt"), "alpha\nBETA\ngamma\n");
  const std::string path = dir.at("a.txt");
  EXPECT_EQ(r->bytes,
            "--- " + path + "\n+++ " + path + "\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n");
  EXPECT_EQ(r->header["written"], true);
  EXPECT_EQ(r->header["replacements"], Json::array({1}));
}

TEST(EditFile, NoMatchNamesTheEditAndChangesNothing) {
  TempDir dir;
  dir.write("a.txt", "alpha\nbeta\n");
  auto r =
      edit_file_op(Json{{"path", "a.txt"}, {"edits", {edit("alpha", "A"), edit("delta", "D")}}},
                   context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("edits[1]: old_text matches 0 times"), std::string::npos)
      << r.error().why;
  EXPECT_EQ(dir.read("a.txt"), "alpha\nbeta\n");  // edits[0] was not applied either
}

TEST(EditFile, AmbiguousMatchGivesTheCountAndLines) {
  TempDir dir;
  dir.write("a.txt", "x = 1\ny = 2\nx = 1\n");
  auto r =
      edit_file_op(Json{{"path", "a.txt"}, {"edits", {edit("x = 1", "x = 3")}}}, context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("edits[0]: old_text matches 2 times (at lines 1, 3)"),
            std::string::npos)
      << r.error().why;
  EXPECT_EQ(dir.read("a.txt"), "x = 1\ny = 2\nx = 1\n");
}

TEST(EditFile, ReplaceAllReplacesEveryOccurrence) {
  TempDir dir;
  dir.write("a.txt", "x = 1\ny = 2\nx = 1\n");
  auto r = edit_file_op(Json{{"path", "a.txt"}, {"edits", {edit("x = 1", "x = 3", true)}}},
                        context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(dir.read("a.txt"), "x = 3\ny = 2\nx = 3\n");
  EXPECT_EQ(r->header["replacements"], Json::array({2}));
}

TEST(EditFile, EditsApplyInOrderToTheEditedText) {
  TempDir dir;
  dir.write("a.txt", "one\n");
  auto r =
      edit_file_op(Json{{"path", "a.txt"}, {"edits", {edit("one", "two"), edit("two", "three")}}},
                   context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(dir.read("a.txt"), "three\n");
}

TEST(EditFile, CrlfFileMatchesLfEditsAndStaysCrlf) {
  TempDir dir;
  dir.write("w.txt", "first\r\nsecond\r\nthird\r\n", 0600);
  auto r = edit_file_op(
      Json{{"path", "w.txt"}, {"edits", {edit("first\nsecond\n", "first\nnew\nsecond\n")}}},
      context_for(dir));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(dir.read("w.txt"), "first\r\nnew\r\nsecond\r\nthird\r\n");
  EXPECT_EQ(r->header["line_endings"], "crlf");
  struct stat st {};
  ASSERT_EQ(::stat(dir.at("w.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(EditFile, CrlfEditsWorkToo) {
  TempDir dir;
  dir.write("w.txt", "a\r\nb\r\n");
  auto r = edit_file_op(Json{{"path", "w.txt"}, {"edits", {edit("a\r\nb", "c\r\nd")}}},
                        context_for(dir));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(dir.read("w.txt"), "c\r\nd\r\n");
}

TEST(EditFile, KeepsTheByteOrderMark) {
  TempDir dir;
  dir.write("b.txt", "\xef\xbb\xbfname = old\n");
  auto r = edit_file_op(Json{{"path", "b.txt"}, {"edits", {edit("name = old", "name = new")}}},
                        context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(dir.read("b.txt"), "\xef\xbb\xbfname = new\n");
  EXPECT_EQ(r->header["bom"], true);
  EXPECT_EQ(r->bytes.find("\xef\xbb\xbf"), std::string::npos);  // the diff shows text only
}

TEST(EditFile, DryRunWritesNothing) {
  TempDir dir;
  dir.write("a.txt", "alpha\n");
  auto r =
      edit_file_op(Json{{"path", "a.txt"}, {"edits", {edit("alpha", "omega")}}, {"dry_run", true}},
                   context_for(dir));
  ASSERT_TRUE(r);
  EXPECT_EQ(dir.read("a.txt"), "alpha\n");
  EXPECT_EQ(r->header["written"], false);
  EXPECT_EQ(r->header["changed"], true);
  EXPECT_NE(r->bytes.find("-alpha\n+omega\n"), std::string::npos) << r->bytes;
  EXPECT_EQ(dir.names(), std::vector<std::string>{"a.txt"});
}

TEST(EditFile, EmptyOldTextAndBinaryFilesAreRefused) {
  TempDir dir;
  dir.write("a.txt", "alpha\n");
  auto empty = edit_file_op(Json{{"path", "a.txt"}, {"edits", {edit("", "x")}}}, context_for(dir));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().why.find("old_text is empty"), std::string::npos);

  dir.write("bin", std::string("a\0b", 3));
  auto binary = edit_file_op(Json{{"path", "bin"}, {"edits", {edit("a", "b")}}}, context_for(dir));
  ASSERT_FALSE(binary);
  EXPECT_NE(binary.error().why.find("binary"), std::string::npos);
}

TEST(EditFile, RefusesASymlinkEvenInADryRun) {
  TempDir dir;
  dir.write("t.txt", "alpha\n");
  ASSERT_EQ(::symlink("t.txt", dir.at("l").c_str()), 0);
  auto r = edit_file_op(Json{{"path", "l"}, {"edits", {edit("alpha", "beta")}}, {"dry_run", true}},
                        context_for(dir));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, ELOOP);
}

TEST(TextEdit, MixedLineEndingsMatchByteForByte) {
  auto r = apply_edits("a\r\nb\nc\n", {TextEdit{"a\r\nb", "x", false}}, "f");
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->crlf);
  EXPECT_EQ(r->bytes, "x\nc\n");
  auto lf = apply_edits("a\r\nb\nc\n", {TextEdit{"a\nb", "x", false}}, "f");
  EXPECT_FALSE(lf);
}

TEST(TextEdit, ZeroMatchAfterAnEarlierEditSaysSo) {
  auto r = apply_edits("abc\n", {TextEdit{"abc", "xyz", false}, TextEdit{"abc", "q", false}}, "f");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("an earlier edit changed that text"), std::string::npos)
      << r.error().why;
}

TEST(TextEdit, ZeroMatchPointsAtAWhitespaceNearMiss) {
  auto r = apply_edits("a\n  if (x) {\n    y();\n  }\n", {TextEdit{"if (x) {\n  y();", "z", false}},
                       "f");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().why.find("matches at line 2 if indentation and trailing blanks are ignored"),
            std::string::npos)
      << r.error().why;
}

}  // namespace
}  // namespace brig::files
