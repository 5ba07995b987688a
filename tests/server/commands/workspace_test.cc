#include "server/commands/workspace.h"

#include <sys/stat.h>

#include <fstream>

#include <gtest/gtest.h>

#include "tests/server/test_support.h"

namespace brig::commands {
namespace {

using server::testing::TempDir;

TEST(Workspace, ImplicitIsTheCurrentDirectory) {
  TempDir dir;
  auto ws = resolve_workspace(std::nullopt, dir.path(), "/nonexistent-home");
  ASSERT_TRUE(ws) << ws.error().to_string();
  EXPECT_EQ(ws->path, dir.path());
  EXPECT_TRUE(ws->implicit);
  EXPECT_FALSE(ws->warning);
}

TEST(Workspace, ImplicitRootHomeAndSystemDirectoriesAreRefused) {
  TempDir home;
  for (const std::string& cwd :
       std::vector<std::string>{"/", "/usr", "/etc", "/tmp", "/proc/self", home.path()}) {
    auto ws = resolve_workspace(std::nullopt, cwd, home.path());
    ASSERT_FALSE(ws) << cwd << " was accepted";
    EXPECT_NE(ws.error().why.find("--workspace"), std::string::npos) << ws.error().to_string();
  }
}

TEST(Workspace, ExplicitRootIsRefusedEvenWhenAsked) {
  auto ws = resolve_workspace(std::string("/"), "/tmp", "");
  ASSERT_FALSE(ws);
  EXPECT_NE(ws.error().why.find("whole filesystem"), std::string::npos);
}

TEST(Workspace, ExplicitHomeOrSystemDirectoryIsAcceptedWithAWarning) {
  TempDir home;
  auto ws = resolve_workspace(home.path(), "/tmp", home.path());
  ASSERT_TRUE(ws) << ws.error().to_string();
  EXPECT_FALSE(ws->implicit);
  ASSERT_TRUE(ws->warning);
  EXPECT_NE(ws->warning->find("home directory"), std::string::npos);

  auto etc = resolve_workspace(std::string("/etc"), "/tmp", home.path());
  ASSERT_TRUE(etc);
  ASSERT_TRUE(etc->warning);
  EXPECT_NE(etc->warning->find("system directory"), std::string::npos);
}

TEST(Workspace, RelativePathsResolveAgainstTheCurrentDirectoryAndSymlinks) {
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.file("proj").c_str(), 0755), 0);
  ASSERT_EQ(::symlink(dir.file("proj").c_str(), dir.file("link").c_str()), 0);
  auto ws = resolve_workspace(std::string("link"), dir.path(), "");
  ASSERT_TRUE(ws) << ws.error().to_string();
  EXPECT_EQ(ws->path, dir.file("proj"));
}

TEST(Workspace, MissingOrNonDirectoryIsAnError) {
  TempDir dir;
  std::ofstream(dir.file("file")) << "x";
  EXPECT_FALSE(resolve_workspace(dir.file("file"), "/", ""));
  auto missing = resolve_workspace(dir.file("missing"), "/", "");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
}

TEST(Workspace, SystemDirectoryList) {
  EXPECT_TRUE(is_system_directory("/usr"));
  EXPECT_TRUE(is_system_directory("/usr/lib"));
  EXPECT_TRUE(is_system_directory("/etc/ssh"));
  EXPECT_TRUE(is_system_directory("/proc/1"));
  EXPECT_FALSE(is_system_directory("/usr/src/project"));
  EXPECT_FALSE(is_system_directory("/home/ann/project"));
  EXPECT_FALSE(is_system_directory("/tmp/work"));
  EXPECT_FALSE(is_system_directory("/etcetera"));
}

}  // namespace
}  // namespace brig::commands
