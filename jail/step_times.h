// StepTimes: when each step of one jail's setup happened, so that a
// benchmark can split the setup by step (tests/bench/jail_bench.cc) from
// inside the steps rather than around them. Off unless spawn() is asked for
// it: then the launcher, the jail's child and the command (until its
// execve) stamp CLOCK_MONOTONIC into one page they share, which the
// launcher reads once the jail has reported.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "jail/base/error.h"
#include "jail/base/setup_step.h"

namespace brig::jail {

// Who a step belongs to: the launcher (spawn, wait), the jail's child that
// becomes its init (contain.cc's steps), or the command it starts, on the
// init's memory until its execve.
enum class Side : std::uint8_t { launcher, child, command };
inline constexpr std::size_t kSides = 3;

// Most stamps end their step. A step the launcher leaves half-way while the
// child works (netns: the helper started, then reaped; cgroup: made, then
// sent) is stamped once begun as well; so is the command's seccomp (begun:
// the init's code pages released; done: the filter installed; a stamp is a
// clock read and a store, which the filter allows).
enum class Stage : std::uint8_t { done, begun };

// The launcher's points that end no setup step.
enum class Milestone : std::uint8_t {
  planned,          // the ChildPlan, the channels and the stdio fds, before clone3
  spawn_returned,   // off this CPU, the sweep done
  status_received,  // the init reported the command's status
};
inline constexpr std::size_t kMilestones = 3;

// One stamp's slot in the shared page, named by the SetupStep vocabulary so
// that a time, a failure and a message say the same step. Constexpr: the
// child of a raw clone stamps with nothing computed beyond the clock.
class StepMark {
 public:
  constexpr StepMark(Side side, SetupStep step, Stage stage = Stage::done)
      : slot_(slot_of(side, step, stage)) {}
  // Implicit: a milestone is a mark of its own, stamped and read alike.
  constexpr StepMark(Milestone m) : slot_(static_cast<std::size_t>(m)) {}

  // Every slot is one mark: for walking all of them.
  static constexpr StepMark at_slot(std::size_t slot) { return StepMark(slot); }
  constexpr std::size_t slot() const { return slot_; }
  constexpr bool operator==(const StepMark&) const = default;

  // "<side> <step>", with " begun" for Stage::begun: "child mount",
  // "launcher netns begun"; a milestone is the launcher's: "launcher planned".
  std::string name() const;

  // The milestones, then per side every step but none, each done and begun.
  static constexpr std::size_t kStepsPerSide = kSetupSteps - 1;
  static constexpr std::size_t kCount = kMilestones + kSides * kStepsPerSide * 2;

 private:
  explicit constexpr StepMark(std::size_t slot) : slot_(slot) {}
  // SetupStep::none is no step: its slot is past the last, never stamped.
  static constexpr std::size_t slot_of(Side side, SetupStep step, Stage stage) {
    if (step == SetupStep::none) return kCount;
    const std::size_t in_side = static_cast<std::size_t>(step) - 1;
    return kMilestones + (static_cast<std::size_t>(side) * kStepsPerSide + in_side) * 2 +
           static_cast<std::size_t>(stage);
  }
  std::size_t slot_;
};
inline constexpr std::size_t kStepMarks = StepMark::kCount;

struct StepTimes {
  // Nanoseconds from the start of spawn(); negative for a mark not reached.
  // A jail built ahead (spawn_awaiting) starts its time with its command, so
  // only the stamps after start_command count.
  std::array<std::int64_t, kStepMarks> since_start{};
  std::optional<std::chrono::nanoseconds> at(StepMark m) const;
};

// Where the stamps go: a pointer into the shared page, copied into the
// child with the rest of the launcher's memory. A default one (timing off)
// stamps nothing.
class StepStamps {
 public:
  StepStamps() = default;
  explicit StepStamps(std::int64_t* page) : page_(page) {}
  // Async-signal-safe (clock_gettime through the vDSO): callable in the
  // child of a raw clone.
  void mark(StepMark m) const noexcept;
  void mark(Side side, SetupStep step, Stage stage = Stage::done) const noexcept {
    mark(StepMark(side, step, stage));
  }

 private:
  std::int64_t* page_ = nullptr;
};

// Owns the shared page. Move-only; an empty StepClock times nothing.
class StepClock {
 public:
  StepClock() = default;
  static Result<StepClock> create();
  StepClock(StepClock&& o) noexcept;
  StepClock& operator=(StepClock&& o) noexcept;
  StepClock(const StepClock&) = delete;
  StepClock& operator=(const StepClock&) = delete;
  ~StepClock();

  bool active() const { return page_ != nullptr; }
  StepStamps stamps() const { return StepStamps(page_); }
  // The stamps so far, relative to `start` (a steady_clock time, which is
  // CLOCK_MONOTONIC).
  StepTimes read(std::chrono::steady_clock::time_point start) const;

 private:
  std::int64_t* page_ = nullptr;
};

}  // namespace brig::jail
