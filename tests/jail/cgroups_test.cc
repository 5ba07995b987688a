// The cgroup tier's bookkeeping: groups named for their launcher, swept
// when that launcher is gone, kept while it lives.
#include "jail/steps/cgroups.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
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

// A process that joins every group of g, as the command does, then exits
// at once (`linger` false: a zombie until reaped) or when the pipe's write
// end, which the caller keeps (*release), is closed. Its pid, or -1.
pid_t fork_into(const cgroups::Group& g, bool linger, int* release) {
  int go[2];
  if (::pipe(go) != 0) return -1;
  const pid_t inside = ::fork();
  if (inside == 0) {
    for (const auto& fd : g.procs_fds)
      if (::write(fd.get(), "0", 1) != 1) ::_exit(1);
    if (!linger) ::_exit(0);
    char c;
    ::close(go[1]);
    ::_exit(::read(go[0], &c, 1) < 0 ? 1 : 0);
  }
  ::close(go[0]);
  *release = go[1];
  return inside;
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
  int release = -1;
  const pid_t inside = fork_into(g, /*linger=*/true, &release);
  ASSERT_GE(inside, 0);
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

  ::close(release);
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

// Turns cgroups::reuse_empty_groups on for one test, and off (the spares
// removed) however the test ends.
struct Reusing {
  Reusing() { cgroups::reuse_empty_groups(true); }
  ~Reusing() { cgroups::reuse_empty_groups(false); }
};

bool cgroup_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// brig-spawner keeps a jail's groups for the next jail with the same limits
// once the jail has left them: never one that still holds a task or much
// memory, never for other limits, never one that is gone.
TEST(CgroupsTest, OnlyAnEmptyLightGroupIsReusedAndOnlyForTheSameLimits) {
  Limits limits;
  limits.pids = 16;
  limits.memory_bytes = 64 << 20;
  const Reusing reusing;
  cgroups::Group g = cgroups::create(limits);
  if (g.tier == LimitsTier::none)
    GTEST_SKIP() << "no cgroup tier for this user (" << g.detail << ")";
  EXPECT_TRUE(g.launcher_keeps) << "the init would remove a group meant for reuse";
  const std::string name = g.name;
  const std::vector<std::string> paths = g.paths;
  cgroups::remove(g);
  for (const auto& p : paths) EXPECT_TRUE(cgroup_exists(p)) << p << " removed instead of kept";

  Limits other = limits;
  other.pids = 17;
  cgroups::Group different = cgroups::create(other);
  EXPECT_NE(different.name, name) << "a group made for pids 16 served pids 17";
  // A limit changed while it waited is written again when it is reused.
  const std::string pids_max = paths.front() + "/pids.max";
  std::ofstream(pids_max) << "1";
  cgroups::Group again = cgroups::create(limits);
  EXPECT_EQ(again.name, name) << "the spare was not reused";
  EXPECT_EQ(again.paths, paths);
  ASSERT_EQ(again.procs_fds.size(), paths.size()) << "reused without its join files";
  std::string written;
  std::ifstream(pids_max) >> written;
  EXPECT_EQ(written, "16") << "reused with the limit it was left with";

  // Something of its jail is left in it: a file on a tmpfs, charged to its
  // memory group until deleted. The group is removed, not kept.
  if (again.limits_memory) {
    char file[] = "/dev/shm/brig-cgroups-test.XXXXXX";
    const int fd = ::mkstemp(file);
    ASSERT_GE(fd, 0);
    const pid_t writer = ::fork();
    ASSERT_GE(writer, 0);
    if (writer == 0) {
      for (const auto& join : again.procs_fds)
        if (::write(join.get(), "0", 1) != 1) ::_exit(1);
      const std::string mib(1 << 20, 'x');
      for (uint64_t i = 0; i < 2 * cgroups::kSpareChargeMax / mib.size(); ++i)
        if (::write(fd, mib.data(), mib.size()) != static_cast<ssize_t>(mib.size())) ::_exit(2);
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(writer, &status, 0), writer);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    cgroups::remove(again);
    ::close(fd);
    ::unlink(file);
    for (const auto& p : paths)
      EXPECT_FALSE(cgroup_exists(p)) << p << " kept with its jail's memory";
  } else {
    cgroups::remove(again);
  }

  // A spare removed behind brig's back (rmdir of an empty group) is not
  // handed out: the jail could not join it.
  cgroups::Group kept = cgroups::create(limits);
  const std::string kept_name = kept.name;
  const std::vector<std::string> kept_paths = kept.paths;
  cgroups::remove(kept);
  for (const auto& p : kept_paths) ASSERT_EQ(::rmdir(p.c_str()), 0) << p;
  cgroups::Group fresh = cgroups::create(limits);
  EXPECT_NE(fresh.name, kept_name) << "handed out a group that is gone";
  for (const auto& p : fresh.paths) EXPECT_TRUE(cgroup_exists(p)) << p;
  cgroups::remove(fresh);
  cgroups::remove(different);
  EXPECT_FALSE(our_cgroups().empty()) << "no spare kept";
  cgroups::reuse_empty_groups(false);
  EXPECT_TRUE(our_cgroups().empty()) << "spares left after reuse ended";
}

// A group its jail has not left is not reused: a process still in it, or a
// zombie whose parent is outside (cgroup.procs no longer lists it; the pids
// controller still counts it). Each goes as a busy group does.
TEST(CgroupsTest, AGroupStillHoldingATaskIsNotReused) {
  Limits limits;
  limits.pids = 16;
  const Reusing reusing;
  cgroups::defer_busy_removals(true);
  struct DeferOff {
    ~DeferOff() { cgroups::defer_busy_removals(false); }
  } deferring;
  for (const bool zombie : {false, true}) {
    cgroups::Group g = cgroups::create(limits);
    if (g.tier == LimitsTier::none)
      GTEST_SKIP() << "no cgroup tier for this user (" << g.detail << ")";
    const std::string name = g.name;
    const std::vector<std::string> paths = g.paths;
    int release = -1;
    const pid_t inside = fork_into(g, /*linger=*/!zombie, &release);
    ASSERT_GE(inside, 0);
    if (zombie) {
      // Exited, not reaped: gone from cgroup.procs, still counted.
      siginfo_t info{};
      ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(inside), &info, WEXITED | WNOWAIT), 0);
    } else {
      for (int i = 0; i < 2000 && cgroup_is_empty(paths[0]); ++i) ::usleep(1000);
      ASSERT_FALSE(cgroup_is_empty(paths[0])) << "the child never joined";
    }
    cgroups::remove(g);
    cgroups::Group next = cgroups::create(limits);
    EXPECT_NE(next.name, name) << (zombie ? "a zombie's" : "a busy") << " group was reused";
    cgroups::remove(next);
    ::close(release);
    int status = 0;
    ASSERT_EQ(::waitpid(inside, &status, 0), inside);
    for (int i = 0; i < 400; ++i) {
      const auto at = cgroups::retry_deferred(nullptr);
      if (!at) break;
      std::this_thread::sleep_until(*at);
    }
    for (const auto& p : paths)
      EXPECT_FALSE(cgroup_exists(p)) << p << " neither reused nor removed once its task left";
  }
  cgroups::reuse_empty_groups(false);
  EXPECT_TRUE(our_cgroups().empty());
}

// The init leaves groups meant for reuse to its launcher (and removes the
// others itself where it may).
TEST(CgroupsTest, TheInitLeavesAGroupMeantForReuse) {
  Limits limits;
  limits.pids = 16;
  const Reusing reusing;
  cgroups::Group g = cgroups::create(limits);
  if (g.tier == LimitsTier::none)
    GTEST_SKIP() << "no cgroup tier for this user (" << g.detail << ")";
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_EQ(cgroups::send_to_child(sv[0], g), 0);
  cgroups::Received r;
  ASSERT_EQ(cgroups::receive_in_child(sv[1], &r), 0);
  EXPECT_TRUE(r.launcher_keeps);
  EXPECT_EQ(cgroups::remove_in_child(r), r.count);
  for (const auto& p : g.paths) EXPECT_TRUE(cgroup_exists(p)) << p << " removed by the init";
  for (int i = 0; i < r.count; ++i) ::close(r.procs_fds[i]), ::close(r.dir_fds[i]);
  ::close(sv[0]);
  ::close(sv[1]);
  cgroups::reuse_empty_groups(false);
  cgroups::remove(g);
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
