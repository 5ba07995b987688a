// SpawnOptions::time_steps: every step of a jail's setup is stamped, each
// side (launcher, child, command) in its own order, and nothing is stamped
// unless asked. Runs as root and as an unprivileged user (scripts/test.sh).
#include "jail/step_times.h"

#include <set>
#include <string>
#include <vector>

#include "jail/launcher.h"
#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

class StepTimesTest : public JailTest {
 protected:
  ExecRequest true_request() const {
    ExecRequest r;
    r.argv = {"true"};
    r.env = {"PATH=/usr/bin:/bin"};
    return r;
  }
};

// The stamps of `marks` that were made, checked to be in the given order.
void expect_in_order(const StepTimes& t, const std::vector<StepMark>& marks) {
  std::int64_t last = -1;
  std::string last_mark = "the start";
  for (StepMark m : marks) {
    const auto at = t.at(m);
    if (!at) continue;
    EXPECT_GE(at->count(), last) << m.name() << " before " << last_mark;
    last = at->count();
    last_mark = m.name();
  }
}

constexpr StepMark launcher(SetupStep step, Stage stage = Stage::done) {
  return {Side::launcher, step, stage};
}
constexpr StepMark child(SetupStep step) {
  return {Side::child, step};
}
constexpr StepMark command(SetupStep step, Stage stage = Stage::done) {
  return {Side::command, step, stage};
}

TEST_F(StepTimesTest, EveryStepIsStampedInEachSidesOrder) {
  auto jailed = spawn(base_spec(workspace_.path()), true_request(),
                      SpawnOptions{.time_steps = true, .wait_readable = {}, .verified = {}});
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  auto outcome = wait(*jailed);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  ASSERT_EQ(outcome->exit_status(), 0) << outcome->to_string();
  ASSERT_TRUE(outcome->steps.has_value());
  const StepTimes& t = *outcome->steps;

  // Whatever the tier: only the helper, the child's joining its network
  // namespace and the maps depend on namespaces.
  for (StepMark m : {StepMark(Milestone::planned),
                     launcher(SetupStep::clone3),
                     launcher(SetupStep::sync),
                     launcher(SetupStep::cgroup, Stage::begun),
                     launcher(SetupStep::cgroup),
                     StepMark(Milestone::spawn_returned),
                     child(SetupStep::sync),
                     child(SetupStep::fds),
                     child(SetupStep::identity),
                     child(SetupStep::mount),
                     child(SetupStep::hostname),
                     child(SetupStep::cgroup),
                     command(SetupStep::identity),
                     command(SetupStep::cgroup),
                     command(SetupStep::rlimit),
                     command(SetupStep::chdir),
                     command(SetupStep::caps),
                     command(SetupStep::no_new_privs),
                     command(SetupStep::landlock),
                     command(SetupStep::seccomp, Stage::begun),
                     command(SetupStep::seccomp),
                     command(SetupStep::exec),
                     StepMark(Milestone::status_received)}) {
    EXPECT_TRUE(t.at(m).has_value()) << m.name() << " was not stamped";
  }
  expect_in_order(
      t, {Milestone::planned, launcher(SetupStep::clone3), launcher(SetupStep::netns, Stage::begun),
          launcher(SetupStep::uid_map), launcher(SetupStep::sync),
          launcher(SetupStep::cgroup, Stage::begun), launcher(SetupStep::netns),
          launcher(SetupStep::cgroup), Milestone::spawn_returned, Milestone::status_received});
  expect_in_order(
      t, {child(SetupStep::sync), child(SetupStep::fds), child(SetupStep::identity),
          child(SetupStep::mount), child(SetupStep::netns), child(SetupStep::hostname),
          child(SetupStep::cgroup), command(SetupStep::identity), command(SetupStep::cgroup),
          command(SetupStep::caps), command(SetupStep::no_new_privs), command(SetupStep::landlock),
          command(SetupStep::rlimit), command(SetupStep::seccomp, Stage::begun),
          command(SetupStep::seccomp), command(SetupStep::chdir), command(SetupStep::exec),
          Milestone::status_received});
  // Across the sides, only what a message orders: the child goes on once
  // released, and the init reports after the command's execve.
  expect_in_order(
      t, {launcher(SetupStep::clone3), launcher(SetupStep::uid_map), child(SetupStep::sync)});
  // Everything happened within the jail's life as the Outcome measured it.
  EXPECT_GE(t.at(Milestone::planned)->count(), 0);
  EXPECT_LE(t.at(Milestone::status_received)->count(), outcome->duration.count());
}

TEST_F(StepTimesTest, NothingIsStampedUnlessAsked) {
  auto jailed = spawn(base_spec(workspace_.path()), true_request());
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  auto outcome = wait(*jailed);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->exit_status(), 0) << outcome->to_string();
  EXPECT_FALSE(outcome->steps.has_value());
}

TEST(StepClock, ReadsOnlyWhatWasStampedRelativeToTheStart) {
  const auto start = std::chrono::steady_clock::now();
  auto clock = StepClock::create();
  ASSERT_TRUE(clock) << clock.error().to_string();
  clock->stamps().mark(Side::launcher, SetupStep::clone3);
  // SetupStep::none is no step: nothing is stamped for it.
  clock->stamps().mark(Side::command, SetupStep::none);
  const StepTimes t = clock->read(start);
  ASSERT_TRUE(t.at(launcher(SetupStep::clone3)).has_value());
  EXPECT_GE(t.at(launcher(SetupStep::clone3))->count(), 0);
  // Seconds, not since boot.
  EXPECT_LT(t.at(launcher(SetupStep::clone3))->count(), 10'000'000'000);
  EXPECT_FALSE(t.at(Milestone::planned).has_value());
  // The same step on another side, or begun rather than done, is another mark.
  EXPECT_FALSE(t.at(child(SetupStep::clone3)).has_value());
  EXPECT_FALSE(t.at(launcher(SetupStep::clone3, Stage::begun)).has_value());
  EXPECT_FALSE(t.at(StepMark(Side::command, SetupStep::none)).has_value());
  for (std::size_t i = 0; i < kStepMarks; ++i) {
    if (i != launcher(SetupStep::clone3).slot()) {
      EXPECT_FALSE(t.at(StepMark::at_slot(i)).has_value()) << StepMark::at_slot(i).name();
    }
  }
  EXPECT_FALSE(StepClock().active());
  StepStamps().mark(Milestone::planned);  // timing off: no page, no effect, no crash
}

TEST(StepClock, EveryMarkHasItsOwnName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kStepMarks; ++i) {
    const StepMark m = StepMark::at_slot(i);
    EXPECT_EQ(m.slot(), i);
    const std::string name = m.name();
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name, "none");
    EXPECT_EQ(name.find("unknown"), std::string::npos) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kStepMarks);
  // Named as the side and the SetupStep's own name (setup_step.h).
  EXPECT_EQ(child(SetupStep::mount).name(), "child mount");
  EXPECT_EQ(command(SetupStep::no_new_privs).name(), "command no_new_privs");
  EXPECT_EQ(launcher(SetupStep::netns, Stage::begun).name(), "launcher netns begun");
  EXPECT_EQ(StepMark(Milestone::status_received).name(), "launcher status_received");
}

}  // namespace
}  // namespace brig::jail::test
