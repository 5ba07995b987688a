#include "jail/steps/exec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace brig::jail::exec {
namespace {

using ::testing::ElementsAre;

TEST(ExecPathTest, SearchesTheJailsPathNotBrigs) {
  EXPECT_THAT(path_candidates("make", {"HOME=/h", "PATH=/opt/bin:/usr/bin"}),
              ElementsAre("/opt/bin/make", "/usr/bin/make"));
}

TEST(ExecPathTest, DefaultPathWhenTheEnvHasNone) {
  EXPECT_THAT(path_candidates("sh", {}),
              ElementsAre("/usr/local/bin/sh", "/usr/bin/sh", "/bin/sh"));
}

TEST(ExecPathTest, NameWithSlashIsTriedAsItIs) {
  EXPECT_THAT(path_candidates("./run.sh", {"PATH=/usr/bin"}), ElementsAre("./run.sh"));
  EXPECT_THAT(path_candidates("/bin/true", {"PATH=/usr/bin"}), ElementsAre("/bin/true"));
}

TEST(ExecPathTest, EmptyPathElementMeansTheWorkingDirectory) {
  EXPECT_THAT(path_candidates("x", {"PATH=:/bin"}), ElementsAre("x", "/bin/x"));
}

TEST(ExecPathTest, PreparedArraysAreNullTerminated) {
  ExecRequest r;
  r.argv = {"echo", "hi"};
  r.env = {"A=1"};
  const Prepared p = prepare(r);
  ASSERT_EQ(p.argv.size(), 3u);
  EXPECT_STREQ(p.argv[0], "echo");
  EXPECT_STREQ(p.argv[1], "hi");
  EXPECT_EQ(p.argv[2], nullptr);
  ASSERT_EQ(p.envp.size(), 2u);
  EXPECT_STREQ(p.envp[0], "A=1");
  EXPECT_EQ(p.envp[1], nullptr);
}

}  // namespace
}  // namespace brig::jail::exec
