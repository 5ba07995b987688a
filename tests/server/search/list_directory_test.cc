#include "server/search/list_directory.h"
#include "server/tools/list_directory_tool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "protocol/schema_check.h"

#include "tests/server/files/temp_dir.h"

namespace brig::search {
namespace {

using files::testing::context_for;
using files::testing::TempDir;
using protocol::Json;

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
  EXPECT_EQ(r->header["omitted"], 3);  // src/deep, src/main.cc, src/deep/x.h
  EXPECT_EQ(r->header["truncated"], true);
  const auto result = tools::format_list_directory(Json::object(), std::move(*r));
  const std::string text = result.content[0].to_json()["text"];
  EXPECT_NE(text.find("3 more left out by the limit of 6"), std::string::npos) << text;
}

// A huge directory pages by cursor: the pages, put together, are the whole
// listing in order, each within the limit, with the count of what follows;
// the entry a cursor names may vanish between calls.
TEST_F(ListDirectory, AFlatListingPagesByCursor) {
  ASSERT_EQ(::mkdir(dir_.at("many").c_str(), 0755), 0);
  for (int i = 0; i < 230; ++i) dir_.write(fmt::format("many/f{:03}", i), "x");
  ASSERT_EQ(::mkdir(dir_.at("many/sub").c_str(), 0755), 0);
  auto whole = list_directory_op(Json{{"path", "many"}, {"limit", 10000}}, context_for(dir_));
  ASSERT_TRUE(whole);
  EXPECT_FALSE(whole->header.contains("next_cursor"));
  const std::vector<std::string> all = paths_of(whole->header);
  ASSERT_EQ(all.size(), 231u);

  std::vector<std::string> paged;
  Json args = {{"path", "many"}, {"limit", 40}};
  for (int page = 0; page < 20; ++page) {
    auto r = list_directory_op(args, context_for(dir_));
    ASSERT_TRUE(r) << r.error().to_string();
    const std::vector<std::string> got = paths_of(r->header);
    EXPECT_LE(got.size(), 40u);
    paged.insert(paged.end(), got.begin(), got.end());
    EXPECT_EQ(r->header["omitted"], all.size() - paged.size());
    if (page == 0) {
      const protocol::ToolDescriptor d = tools::list_directory_descriptor();
      const protocol::ToolResult t = tools::format_list_directory(args, std::move(*r));
      EXPECT_FALSE(protocol::check_schema(*t.structured, *d.output_schema, "structured"));
      EXPECT_NE(t.content[0].to_json()["text"].get<std::string>().find("cursor="),
                std::string::npos);
      args["cursor"] = (*t.structured)["next_cursor"];
      // The entry the cursor names goes away: the next page starts after it.
      ASSERT_EQ(::unlink(dir_.at("many/" + got.back()).c_str()), 0);
      continue;
    }
    if (!r->header.contains("next_cursor")) break;
    args["cursor"] = r->header["next_cursor"];
  }
  EXPECT_EQ(paged, all);
}

TEST_F(ListDirectory, ACursorBelongsToItsListing) {
  for (int i = 0; i < 5; ++i) dir_.write(fmt::format("src/f{}", i), "");
  auto first = list_directory_op(Json{{"path", "src"}, {"limit", 2}}, context_for(dir_));
  ASSERT_TRUE(first);
  const Json cursor = first->header["next_cursor"];
  auto other = list_directory_op(Json{{"limit", 2}, {"cursor", cursor}}, context_for(dir_));
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().why.find("another query"), std::string::npos);
  auto deep = list_directory_op(
      Json{{"path", "src"}, {"limit", 2}, {"depth", 2}, {"cursor", cursor}}, context_for(dir_));
  EXPECT_FALSE(deep);
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
  if (files::testing::running_as_root()) GTEST_SKIP() << "root reads any directory";
  ASSERT_EQ(::chmod(dir_.at("src/deep").c_str(), 0), 0);
  auto r = list_directory_op(Json{{"path", "src"}, {"depth", 2}}, context_for(dir_));
  ASSERT_TRUE(r);
  const Json* deep = entry(r->header, "deep");
  ASSERT_NE(deep, nullptr);
  EXPECT_TRUE(deep->contains("error"));
}

TEST_F(ListDirectory, IgnoredEntriesAreLeftOutAndCountedUnlessAsked) {
  // .git exists (SetUp), so .gitignore counts, as in git.
  dir_.write(".gitignore", "*.log\nbuild/\n!keep.log\n");
  dir_.write("debug.log", "x");
  dir_.write("keep.log", "x");
  ASSERT_EQ(::mkdir(dir_.at("build").c_str(), 0755), 0);
  dir_.write("build/out.o", "x");
  dir_.write("src/.ignore", "deep/\n");

  auto r = list_directory_op(Json{{"depth", 3}}, context_for(dir_));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(paths_of(r->header),
            (std::vector<std::string>{".env", ".git", ".gitignore", "b.txt", "keep.log", "link",
                                      "src", "src/.ignore", "src/dangling", "src/main.cc"}));
  EXPECT_EQ(r->header["skipped_ignored"], 3);  // debug.log, build/, src/deep/

  auto all = list_directory_op(Json{{"depth", 3}, {"gitignore", false}}, context_for(dir_));
  ASSERT_TRUE(all);
  EXPECT_NE(entry(all->header, "build/out.o"), nullptr);
  EXPECT_NE(entry(all->header, "debug.log"), nullptr);
  EXPECT_NE(entry(all->header, "src/deep/x.h"), nullptr);
  EXPECT_EQ(all->header["skipped_ignored"], 0);
}

TEST_F(ListDirectory, SpecialFilesAreListedAsOther) {
  ASSERT_EQ(::mkfifo(dir_.at("pipe").c_str(), 0644), 0);
  auto r = list_directory_op(Json::object(), context_for(dir_));
  ASSERT_TRUE(r);
  ASSERT_NE(entry(r->header, "pipe"), nullptr);
  EXPECT_EQ((*entry(r->header, "pipe"))["type"], "other");
}

TEST_F(ListDirectory, TheResultMatchesTheOutputSchema) {
  const Json args = {{"depth", 2}};
  auto r = list_directory_op(args, context_for(dir_));
  ASSERT_TRUE(r);
  const protocol::ToolDescriptor d = tools::list_directory_descriptor();
  const protocol::ToolResult result = tools::format_list_directory(args, std::move(*r));
  ASSERT_TRUE(result.structured && d.output_schema);
  const auto problem = protocol::check_schema(*result.structured, *d.output_schema, "structured");
  EXPECT_FALSE(problem) << problem.value_or("");
  EXPECT_NE(result.content[0].to_json()["text"].get<std::string>().find("src/main.cc"),
            std::string::npos);
}

}  // namespace
}  // namespace brig::search
