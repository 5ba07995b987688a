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
#include <string_view>

#include "jail/base/error.h"

namespace brig::jail {

// In the order they happen on each side; the launcher's and the child's run
// at the same time, on different CPUs.
enum class StepMark : std::uint8_t {
  // The launcher, in spawn().
  planned,               // the ChildPlan: mount plan, exec paths, caps, Landlock, seccomp
  cloned,                // clone3 with the namespaces returned
  netns_helper_started,  // the network namespace's helper cloned
  maps_written,          // uid/gid maps
  released,              // the child told to go on
  cgroups_made,
  netns_helper_reaped,
  cgroups_sent,
  spawn_returned,
  // The jail's child, which becomes its init (contain.cc's steps).
  child_released,
  child_fds,
  child_identity,
  child_mounts,  // new root built and pivoted into
  child_network,
  child_cgroups_received,
  // The command, on the init's memory until its execve.
  command_ids,
  command_limits,  // cgroups joined, rlimits, chdir
  command_caps,    // capabilities dropped, no_new_privs
  command_landlock,
  command_seccomp_next,  // the last stamp: nothing is stamped under seccomp
  // The init, once the command's execve has let go of the shared memory.
  command_execed,
  // The launcher, when the init reported the command's status.
  status_received,
  count
};
inline constexpr std::size_t kStepMarks = static_cast<std::size_t>(StepMark::count);

std::string_view step_mark_name(StepMark m);

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
