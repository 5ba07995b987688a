// SpawnOptions::time_steps: every step of a jail's setup is stamped, each
// side (launcher, child, command) in its own order, and nothing is stamped
// unless asked. Runs as root and as an unprivileged user (scripts/test.sh).
#include "jail/step_times.h"

#include <set>
#include <string_view>
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
  StepMark last_mark = StepMark::count;
  for (StepMark m : marks) {
    const auto at = t.at(m);
    if (!at) continue;
    EXPECT_GE(at->count(), last) << step_mark_name(m) << " before " << step_mark_name(last_mark);
    last = at->count();
    last_mark = m;
  }
}

TEST_F(StepTimesTest, EveryStepIsStampedInEachSidesOrder) {
  auto jailed =
      spawn(base_spec(workspace_.path()), true_request(), SpawnOptions{.time_steps = true});
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  auto outcome = wait(*jailed);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  ASSERT_EQ(outcome->exit_status(), 0) << outcome->to_string();
  ASSERT_TRUE(outcome->steps.has_value());
  const StepTimes& t = *outcome->steps;

  // Whatever the tier: only the helper and the maps depend on namespaces.
  for (StepMark m :
       {StepMark::planned, StepMark::cloned, StepMark::released, StepMark::cgroups_made,
        StepMark::cgroups_sent, StepMark::spawn_returned, StepMark::child_released,
        StepMark::child_fds, StepMark::child_identity, StepMark::child_mounts,
        StepMark::child_network, StepMark::child_cgroups_received, StepMark::command_ids,
        StepMark::command_limits, StepMark::command_caps, StepMark::command_landlock,
        StepMark::command_seccomp_next, StepMark::command_execed, StepMark::status_received}) {
    EXPECT_TRUE(t.at(m).has_value()) << step_mark_name(m) << " was not stamped";
  }
  expect_in_order(t, {StepMark::planned, StepMark::cloned, StepMark::netns_helper_started,
                      StepMark::maps_written, StepMark::released, StepMark::cgroups_made,
                      StepMark::netns_helper_reaped, StepMark::cgroups_sent,
                      StepMark::spawn_returned, StepMark::status_received});
  expect_in_order(
      t, {StepMark::child_released, StepMark::child_fds, StepMark::child_identity,
          StepMark::child_mounts, StepMark::child_network, StepMark::child_cgroups_received,
          StepMark::command_ids, StepMark::command_limits, StepMark::command_caps,
          StepMark::command_landlock, StepMark::command_seccomp_next, StepMark::command_execed,
          StepMark::status_received});
  // Across the sides, only what a message orders: the child goes on once
  // released, and the init reports after the command's execve.
  expect_in_order(t, {StepMark::cloned, StepMark::maps_written, StepMark::child_released});
  // Everything happened within the jail's life as the Outcome measured it.
  EXPECT_GE(t.at(StepMark::planned)->count(), 0);
  EXPECT_LE(t.at(StepMark::status_received)->count(), outcome->duration.count());
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
  clock->stamps().mark(StepMark::cloned);
  const StepTimes t = clock->read(start);
  ASSERT_TRUE(t.at(StepMark::cloned).has_value());
  EXPECT_GE(t.at(StepMark::cloned)->count(), 0);
  EXPECT_LT(t.at(StepMark::cloned)->count(), 10'000'000'000);  // seconds, not since boot
  EXPECT_FALSE(t.at(StepMark::planned).has_value());
  EXPECT_FALSE(StepClock().active());
  StepStamps().mark(StepMark::planned);  // timing off: no page, no effect, no crash
}

TEST(StepClock, EveryMarkHasItsOwnName) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kStepMarks; ++i) {
    const auto name = step_mark_name(static_cast<StepMark>(i));
    EXPECT_NE(name, "unknown");
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kStepMarks);
}

}  // namespace
}  // namespace brig::jail::test
