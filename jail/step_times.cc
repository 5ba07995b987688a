#include "jail/step_times.h"

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include <utility>

namespace brig::jail {
namespace {

constexpr std::size_t kPageBytes = 4096;
static_assert(kStepMarks * sizeof(std::int64_t) <= kPageBytes);

constexpr std::array<const char*, kSides> kSideNames = {"launcher", "child", "command"};
constexpr std::array<const char*, kMilestones> kMilestoneNames = {"planned", "spawn_returned",
                                                                  "status_received"};

}  // namespace

std::string StepMark::name() const {
  if (slot_ < kMilestones) return std::string("launcher ") + kMilestoneNames[slot_];
  if (slot_ >= kCount) return "none";
  const std::size_t i = slot_ - kMilestones;
  const std::size_t side = i / 2 / kStepsPerSide;
  const auto step = static_cast<SetupStep>(i / 2 % kStepsPerSide + 1);
  const auto stage = static_cast<Stage>(i % 2);
  return std::string(kSideNames[side]) + " " + step_name(step) +
         (stage == Stage::begun ? " begun" : "");
}

std::optional<std::chrono::nanoseconds> StepTimes::at(StepMark m) const {
  const auto i = m.slot();
  if (i >= since_start.size() || since_start[i] < 0) return std::nullopt;
  return std::chrono::nanoseconds(since_start[i]);
}

void StepStamps::mark(StepMark m) const noexcept {
  if (page_ == nullptr || m.slot() >= kStepMarks) return;
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  // Each stamp has one writer; the launcher reads them only after the
  // status pipe or the child's exit has ordered the writes before it.
  __atomic_store_n(&page_[m.slot()],
                   static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec,
                   __ATOMIC_RELAXED);
}

Result<StepClock> StepClock::create() {
  void* p = ::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return std::unexpected(sys_error("map the step clock's page", "", errno));
  StepClock c;
  c.page_ = static_cast<std::int64_t*>(p);  // zero-filled: 0 = not reached
  return c;
}

StepClock::StepClock(StepClock&& o) noexcept : page_(std::exchange(o.page_, nullptr)) {}

StepClock& StepClock::operator=(StepClock&& o) noexcept {
  if (this != &o) {
    if (page_ != nullptr) ::munmap(page_, kPageBytes);
    page_ = std::exchange(o.page_, nullptr);
  }
  return *this;
}

StepClock::~StepClock() {
  if (page_ != nullptr) ::munmap(page_, kPageBytes);
}

StepTimes StepClock::read(std::chrono::steady_clock::time_point start) const {
  StepTimes t;
  t.since_start.fill(-1);
  if (page_ == nullptr) return t;
  const std::int64_t origin =
      std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
  for (std::size_t i = 0; i < kStepMarks; ++i) {
    const std::int64_t stamp = __atomic_load_n(&page_[i], __ATOMIC_RELAXED);
    if (stamp != 0) t.since_start[i] = stamp - origin;
  }
  return t;
}

}  // namespace brig::jail
