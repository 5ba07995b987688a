// The cgroup tier's bookkeeping: groups named for their launcher, swept
// when that launcher is gone, kept while it lives.
#include "jail/steps/cgroups.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

// A pid that no process has any more.
pid_t dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int st;
  ::waitpid(p, &st, 0);
  return p;
}

TEST(CgroupsTest, SweepRemovesOnlyGroupsOfLaunchersThatAreGone) {
  Limits limits;
  limits.pids = 16;
  cgroups::Group live = cgroups::create(limits);
  if (live.tier == LimitsTier::none)
    GTEST_SKIP() << "no cgroup tier for this user (" << live.detail << "): nothing to sweep";
  ASSERT_FALSE(live.paths.empty());
  const std::string brig_dir = live.paths[0].substr(0, live.paths[0].rfind('/'));
  const std::string stale = brig_dir + "/" + std::to_string(dead_pid()) + "-1";
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0) << stale;

  EXPECT_GE(cgroups::sweep_stale(), 1);
  struct stat st;
  EXPECT_NE(::stat(stale.c_str(), &st), 0) << stale << " survived the sweep";
  EXPECT_EQ(::stat(live.paths[0].c_str(), &st), 0) << "the sweep removed a live launcher's group";
  cgroups::remove(live);
  EXPECT_TRUE(our_cgroups().empty());
}

// What brig-server states about its limits comes from here: it must match
// what a jail really gets. Root on this project's hybrid hosts gets the v1
// controllers (whole); an unprivileged user gets none (per process).
TEST(CgroupsTest, ProbeSaysWhetherTheLimitsHoldForTheJailAsAWhole) {
  Limits limits;
  limits.pids = 16;
  limits.memory_bytes = 64 << 20;
  const LimitsEnforcement e = cgroups::probe(limits);
  cgroups::Group g = cgroups::create(limits);
  EXPECT_EQ(e.memory_whole, g.limits_memory) << e.detail;
  EXPECT_EQ(e.pids_whole, g.limits_pids) << e.detail;
  if (g.tier == LimitsTier::none) {
    EXPECT_EQ(e.tier, LimitsTier::rlimits);
    EXPECT_FALSE(e.detail.empty()) << "no cgroup, and no reason given";
  }
  cgroups::remove(g);
  EXPECT_TRUE(our_cgroups().empty()) << "probe left a group behind";
  if (::getuid() != 0) {
    EXPECT_FALSE(e.memory_whole) << "unprivileged on a hybrid host";
  }

  const LimitsEnforcement none = cgroups::probe(Limits{});
  EXPECT_TRUE(none.memory_whole && none.pids_whole) << "no limit asked, none broken";
}

}  // namespace
}  // namespace brig::jail::test
