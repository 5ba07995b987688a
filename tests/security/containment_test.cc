// Resource attacks: a fork bomb, a memory bomb and a /tmp filler are each
// held by the limits of a policy that extends default, the jail ends, and
// the host can still fork. As root RLIMIT_NPROC does not hold uid 0, so
// there the cgroup must. ctest runs this binary serially (RUN_SERIAL), with
// small limits and wall times so nothing can hang.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "jail/launcher.h"
#include "tests/security/security_support.h"

namespace brig::security::test {
namespace {

using jail::Layer;
using jail::LayerState;
using jail::Outcome;
using ::testing::HasSubstr;
using ::testing::Not;

const bool kRoot = ::getuid() == 0;

constexpr int kPids = 16;

class ContainmentTest : public SecurityTest {
 protected:
  // A policy file: default with `filesystem` and `limits` (TOML lines) over it.
  std::string limited(const std::string& name, const std::string& limits,
                      const std::string& filesystem = "tmp_size = \"8MiB\"\n") {
    return policy_file(
        name, "extends = \"default\"\n[filesystem]\n" + filesystem + "[limits]\n" + limits);
  }
  std::string bombs() {
    return limited(
        "bombs", "pids = " + std::to_string(kPids) + "\nmemory = \"64MiB\"\nwall_time = \"3s\"\n");
  }
  // As root only a cgroup can hold the pids limit: it must be enforced.
  void expect_cgroups_enforced_as_root(const Outcome& o) {
    const jail::LayerStatus* cg = o.layers.find(Layer::cgroups);
    ASSERT_NE(cg, nullptr);
    if (kRoot) {
      EXPECT_EQ(cg->state, LayerState::enforced) << cg->detail;
    }
  }
};

TEST_F(ContainmentTest, ForkBombIsContained) {
  Planned p = plan(bombs(), {"fork-bomb"});
  auto jailed = jail::spawn(p.spec, p.request);
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  // While it runs, the jail never holds more processes than its limit
  // (the init, a clone of this test, carries no marker).
  ASSERT_TRUE(jailed->deadline());
  size_t most = 0;
  pollfd pfd{jailed->pidfd(), POLLIN, 0};
  while (::poll(&pfd, 1, 10) == 0 && std::chrono::steady_clock::now() < *jailed->deadline())
    most = std::max(most, count_processes_with(marker()));
  auto outcome = jail::wait(*jailed, std::chrono::steady_clock::now() + std::chrono::seconds(60));
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->kind, Outcome::Kind::timed_out) << outcome->to_string();
  EXPECT_GT(most, 1u);  // it did fork
  EXPECT_LE(most, static_cast<size_t>(kPids));
  expect_cgroups_enforced_as_root(*outcome);
  EXPECT_TRUE(can_fork());

  // The limit itself, counted: the probe and 15 children, then EAGAIN.
  const Ran held = run(plan(bombs(), {"forks", "40"}));
  EXPECT_EQ(held.out, "forked=" + std::to_string(kPids - 1) + " err=EAGAIN\n");
  // Control: without the pids limit the same 40 forks all succeed.
  const Ran control =
      run(plan(limited("no-pids", "pids = \"unlimited\"\nwall_time = \"30s\"\n"), {"forks", "40"}));
  EXPECT_EQ(control.out, "forked=40\n");
  EXPECT_TRUE(can_fork());
}

TEST_F(ContainmentTest, MemoryBombIsContained) {
  const Ran attack = run(plan(bombs(), {"alloc", "256"}));
  // The cgroup's OOM killer (SIGKILL), or RLIMIT_DATA where there is no
  // cgroup (malloc fails): either way the jail ends without 256 MiB.
  EXPECT_NE(attack.outcome.exit_status(), 0) << attack.outcome.to_string();
  EXPECT_THAT(attack.out, Not(HasSubstr("allocated=256")));
  expect_cgroups_enforced_as_root(attack.outcome);
  EXPECT_TRUE(can_fork());

  // Control: without the memory limit the same allocation succeeds.
  const Ran control = run(plan(
      limited("no-memory", "memory = \"unlimited\"\nwall_time = \"30s\"\n"), {"alloc", "256"}));
  EXPECT_EQ(control.outcome.exit_status(), 0) << control.outcome.to_string();
  EXPECT_EQ(control.out, "allocated=256\n");
}

TEST_F(ContainmentTest, TmpFillerIsContained) {
  const std::string name = "brig-filler-" + marker();
  for (const std::string dir : {"/tmp/", "/dev/shm/"}) {
    const Ran attack = run(plan(bombs(), {"fill", dir + name, "64"}));
    EXPECT_EQ(attack.outcome.exit_status(), 0) << attack.outcome.to_string();
    EXPECT_THAT(attack.out, ::testing::MatchesRegex("written=[0-8] err=ENOSPC\n")) << dir;
    // The jail's /tmp and /dev/shm are its own: the host's hold nothing of it.
    struct stat st {};
    EXPECT_NE(::lstat((dir + name).c_str(), &st), 0) << dir;
  }
  EXPECT_TRUE(can_fork());

  // Control: a larger tmp_size takes the same 64 MiB.
  const std::string roomy = limited("roomy", "wall_time = \"30s\"\n", "tmp_size = \"128MiB\"\n");
  for (const std::string dir : {"/tmp/", "/dev/shm/"})
    EXPECT_EQ(run(plan(roomy, {"fill", dir + name, "64"})).out, "written=64\n") << dir;
}

}  // namespace
}  // namespace brig::security::test
