#include "server/files/list_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/server/files/temp_dir.h"

namespace brig::files {
namespace {

using protocol::Json;
using testing::context_for;
using testing::TempDir;

std::vector<std::string> paths_of(const Json& header) {
  std::vector<std::string> out;
  for (const Json& e : header["entries"]) out.push_back(e["path"]);
  return out;
}

const Json* entry(const Json& header, const std::string& path) {
  for (const Json& e : header["entries"])
    if (e["path"] == path) return &e;
  return nullptr;
}

class ListDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(dir_.at("src").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dir_.at("src/deep").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(dir_.at(".git").c_str(), 0755), 0);
    dir_.write(".git/HEAD", "ref\n");
    dir_.write(".env", "X=1\n");
    dir_.write("b.txt", "12345");
    dir_.write("src/main.cc", "int main() {}\n");
    dir_.write("src/deep/x.h", "");
    ASSERT_EQ(::symlink("b.txt", dir_.at("link").c_str()), 0);
    ASSERT_EQ(::symlink("/nowhere", dir_.at("src/dangling").c_str()), 0);
  }
  TempDir dir_;
};

TEST_F(ListDirectory, OneLevelWithTypesSizesAndTargets) {
  auto r = list_directory_op(Json::object(), context_for(dir_));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(paths_of(r->header),
            (std::vector<std::string>{".env", ".git", "b.txt", "link", "src"}));
  EXPECT_EQ((*entry(r->header, "b.txt"))["size"], 5);
  EXPECT_EQ((*entry(r->header, "b.txt"))["type"], "file");
  EXPECT_EQ((*entry(r->header, "src"))["type"], "dir");
  EXPECT_EQ((*entry(r->header, "link"))["type"], "symlink");
  EXPECT_EQ((*entry(r->header, "link"))["target"], "b.txt");
  EXPECT_EQ(r->header["omitted"], 0);
  EXPECT_EQ(r->header["truncated"], false);
}

TEST_F(ListDirectory, DepthListsInTreeOrderAndNeverEntersGit) {
  auto r = list_directory_op(Json{{"depth", 3}}, context_for(dir_));
  ASSERT_TRUE(r);
  EXPECT_EQ(paths_of(r->header),
            (std::vector<std::string>{".env", ".git", "b.txt", "link", "src", "src/dangling",
                                      "src/deep", "src/deep/x.h", "src/main.cc"}));
  EXPECT_EQ((*entry(r->header, "src/dangling"))["target"], "/nowhere");
}

TEST_F(ListDirectory, HiddenEntriesCanBeLeftOutAndAreCounted) {
  auto r = list_directory_op(Json{{"hidden", false}}, context_for(dir_));
  ASSERT_TRUE(r);
  EXPECT_EQ(paths_of(r->header), (std::vector<std::string>{"b.txt", "link", "src"}));
  EXPECT_EQ(r->header["skipped_hidden"], 2);
}

TEST_F(ListDirectory, LimitKeepsShallowEntriesAndCountsTheRest) {
  auto r = list_directory_op(Json{{"depth", 3}, {"limit", 6}}, context_for(dir_));
  ASSERT_TRUE(r);
  // Level 1 (5 entries) comes first, then the first of src's, by name.
  EXPECT_EQ(paths_of(r->header),
            (std::vector<std::string>{".env", ".git", "b.txt", "link", "src", "src/dangling"}));
  EXPECT_EQ(r->header["omitted"], 2);  // src/deep, src/main.cc; deep/ is never read
  EXPECT_EQ(r->header["truncated"], true);
  const auto result = format_list_directory(Json::object(), std::move(*r));
  const std::string text = result.content[0]["text"];
  EXPECT_NE(text.find("2 more left out by the limit of 6"), std::string::npos) << text;
}

TEST_F(ListDirectory, SubdirectoryRelativeToTheWorkspace) {
  auto r = list_directory_op(Json{{"path", "src"}}, context_for(dir_));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->header["path"], dir_.at("src"));
  EXPECT_EQ(paths_of(r->header), (std::vector<std::string>{"dangling", "deep", "main.cc"}));
}

TEST_F(ListDirectory, AFileOrMissingPathIsAnError) {
  auto file = list_directory_op(Json{{"path", "b.txt"}}, context_for(dir_));
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().sys_errno, ENOTDIR);
  EXPECT_NE(file.error().why.find("read_file"), std::string::npos);
  auto missing = list_directory_op(Json{{"path", "nope"}}, context_for(dir_));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
}

TEST_F(ListDirectory, UnreadableSubdirectoryIsMarked) {
  if (testing::running_as_root()) GTEST_SKIP() << "root reads any directory";
  ASSERT_EQ(::chmod(dir_.at("src/deep").c_str(), 0), 0);
  auto r = list_directory_op(Json{{"path", "src"}, {"depth", 2}}, context_for(dir_));
  ASSERT_TRUE(r);
  const Json* deep = entry(r->header, "deep");
  ASSERT_NE(deep, nullptr);
  EXPECT_TRUE(deep->contains("error"));
}

}  // namespace
}  // namespace brig::files
