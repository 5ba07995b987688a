// find_git_layout on real directories: plain repositories, linked worktrees,
// and .git files that do not check out.
#include "server/policy/git_layout.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace brig::policy {
namespace {

namespace fs = std::filesystem;

class GitLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/brig-git-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root = fs::canonical(tmpl).string();
    ws = root + "/ws";
    fs::create_directories(ws);
  }
  void TearDown() override { fs::remove_all(root); }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  }
  // A main repository at root/main with a linked worktree at ws, as
  // `git worktree add` lays them out.
  void make_worktree() {
    write(root + "/main/.git/config", "[core]\n\tbare = false\n");
    fs::create_directories(root + "/main/.git/hooks");
    write(root + "/main/.git/worktrees/ws/gitdir", ws + "/.git\n");
    write(root + "/main/.git/worktrees/ws/commondir", "../..\n");
    write(ws + "/.git", "gitdir: " + root + "/main/.git/worktrees/ws\n");
  }

  std::string root, ws;
};

TEST_F(GitLayoutTest, NoGit) {
  EXPECT_EQ(find_git_layout(ws), GitLayout{});
}

TEST_F(GitLayoutTest, PlainRepository) {
  write(ws + "/.git/config", "[core]\n\tbare = false\n");
  EXPECT_EQ(find_git_layout(ws),
            (GitLayout{GitLayout::Kind::directory, ws + "/.git", ws + "/.git", ws + "/.git", ""}));
}

TEST_F(GitLayoutTest, HooksPathIsResolvedAgainstTheWorkTree) {
  write(ws + "/.git/config", "[user]\n\tname = x\n[core]\n  hooksPath = \".husky/_\"\n");
  EXPECT_EQ(find_git_layout(ws).hooks_path, ws + "/.husky/_");
  write(ws + "/.git/config", "[CORE]\nHOOKSPATH=/etc/githooks\n");
  EXPECT_EQ(find_git_layout(ws).hooks_path, "/etc/githooks");
  write(ws + "/.git/config", "[alias]\nhooksPath = /x\n");
  EXPECT_EQ(find_git_layout(ws).hooks_path, "");
}

TEST_F(GitLayoutTest, LinkedWorktree) {
  make_worktree();
  EXPECT_EQ(find_git_layout(ws),
            (GitLayout{GitLayout::Kind::file, ws + "/.git", root + "/main/.git/worktrees/ws",
                       root + "/main/.git", ""}));
}

TEST_F(GitLayoutTest, RelativeGitdir) {
  make_worktree();
  write(ws + "/.git", "gitdir: ../main/.git/worktrees/ws\n");
  EXPECT_EQ(find_git_layout(ws).commondir, root + "/main/.git");
}

// A .git file written by an earlier jail must not get brig to bind an
// arbitrary directory writable into the next one.
TEST_F(GitLayoutTest, GitdirWithoutABackPointerIsNotTrusted) {
  fs::create_directories(root + "/secrets");
  write(ws + "/.git", "gitdir: " + root + "/secrets\n");
  EXPECT_EQ(find_git_layout(ws), (GitLayout{GitLayout::Kind::file, ws + "/.git", "", "", ""}));

  make_worktree();
  write(root + "/main/.git/worktrees/ws/gitdir", root + "/elsewhere/.git\n");
  EXPECT_EQ(find_git_layout(ws), (GitLayout{GitLayout::Kind::file, ws + "/.git", "", "", ""}));
}

TEST_F(GitLayoutTest, MalformedGitFile) {
  write(ws + "/.git", "not a gitdir line\n");
  EXPECT_EQ(find_git_layout(ws), (GitLayout{GitLayout::Kind::file, ws + "/.git", "", "", ""}));
}

TEST_F(GitLayoutTest, SymlinkIsLeftAlone) {
  fs::create_directories(root + "/real.git");
  fs::create_symlink(root + "/real.git", ws + "/.git");
  EXPECT_EQ(find_git_layout(ws), GitLayout{});
}

}  // namespace
}  // namespace brig::policy
