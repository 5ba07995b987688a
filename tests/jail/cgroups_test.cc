// The cgroup tier's bookkeeping: groups named for their launcher, swept
// when that launcher is gone, kept while it lives.
#include "jail/steps/cgroups.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

// Whether the group at `dir` holds no task (v1 tasks, v2 cgroup.procs).
bool cgroup_is_empty(const std::string& dir) {
  for (const char* file : {"/tasks", "/cgroup.procs"}) {
    std::ifstream in(dir + file);
    if (!in) continue;
    std::string line;
    return !std::getline(in, line);
  }
  return true;
}

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

// brig-spawner serves every jail from one loop: a group whose tasks are
// still leaving must not hold it up, and must still go once they have left.
TEST(CgroupsTest, ABusyGroupIsRemovedLaterWithoutHoldingTheCaller) {
  Limits limits;
  limits.pids = 16;
  cgroups::Group g = cgroups::create(limits);
  if (g.tier == LimitsTier::none)
    GTEST_SKIP() << "no cgroup tier for this user (" << g.detail << ")";
  ASSERT_FALSE(g.paths.empty());
  const std::vector<std::string> paths = g.paths;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t inside = ::fork();
  ASSERT_GE(inside, 0);
  if (inside == 0) {
    // Joins every group as the command does, then waits to be let go.
    for (const auto& fd : g.procs_fds)
      if (::write(fd.get(), "0", 1) != 1) ::_exit(1);
    char c;
    ::close(go[1]);
    ::_exit(::read(go[0], &c, 1) < 0 ? 1 : 0);
  }
  ::close(go[0]);
  // Joined once the group counts it (the child writes before it reads).
  for (int i = 0; i < 2000 && cgroup_is_empty(paths[0]); ++i) ::usleep(1000);
  ASSERT_FALSE(cgroup_is_empty(paths[0])) << "the child never joined " << paths[0];

  cgroups::defer_busy_removals(true);
  // Off again however this test ends: the other tests' remove() waits.
  struct DeferOff {
    ~DeferOff() { cgroups::defer_busy_removals(false); }
  } deferring;
  const auto before = std::chrono::steady_clock::now();
  cgroups::remove(g);
  const auto held = std::chrono::steady_clock::now() - before;
  EXPECT_LT(held, std::chrono::milliseconds(100)) << "remove() waited for the busy group";
  struct stat st;
  for (const auto& p : paths) EXPECT_EQ(::stat(p.c_str(), &st), 0) << p << " went while busy";
  std::vector<std::string> given_up;
  EXPECT_TRUE(cgroups::retry_deferred(&given_up).has_value()) << "the busy group was forgotten";

  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(inside, &status, 0), inside);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (int i = 0; i < 400; ++i) {
    const auto next = cgroups::retry_deferred(&given_up);
    if (!next) break;
    std::this_thread::sleep_until(*next);
  }
  EXPECT_FALSE(cgroups::retry_deferred(&given_up).has_value()) << "still kept after its task left";
  EXPECT_TRUE(given_up.empty());
  for (const auto& p : paths) EXPECT_NE(::stat(p.c_str(), &st), 0) << p << " was never removed";
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
