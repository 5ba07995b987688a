// SpoolBudget: the bytes of output every job's Spool of one server may keep
// together (`brig serve --spool-bytes`). A spool is a memfd in brig-server,
// outside every jail's cgroup, so without a total each flooding call would
// hold its 128 MiB for the retention time and a few clients could exhaust
// the host. The job table frees room by dropping the oldest finished jobs'
// output first (make_room); a running job that still finds no room stops
// keeping its head, as past the head limit, and a new job is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace brig::exec {

// The `brig serve` option that sets the budget, named wherever output is
// refused or dropped for it.
inline constexpr const char* kSpoolBytesOption = "--spool-bytes";

class SpoolBudget {
 public:
  explicit SpoolBudget(std::uint64_t limit) : limit_(limit) {}

  std::uint64_t limit() const { return limit_; }
  std::uint64_t used() const { return used_; }
  bool full() const { return used_ >= limit_; }

  // Takes up to `wanted` bytes: first what is free, then, when that is not
  // all, what make_room frees. Returns how many were taken.
  std::uint64_t take(std::uint64_t wanted);
  void give_back(std::uint64_t bytes);

  // Called when a take finds too little free, with the bytes missing; frees
  // what it can (the job table's eviction). Empty: nothing to free.
  std::function<void(std::uint64_t missing)> make_room;

 private:
  std::uint64_t limit_;
  std::uint64_t used_ = 0;
};

// Bytes held from a SpoolBudget, given back when the holder goes. Move-only,
// so that a moved Spool does not give its bytes back twice.
class BudgetHold {
 public:
  BudgetHold() = default;
  explicit BudgetHold(std::shared_ptr<SpoolBudget> budget) : budget_(std::move(budget)) {}
  BudgetHold(BudgetHold&& o) noexcept : budget_(std::move(o.budget_)), bytes_(o.bytes_) {
    o.bytes_ = 0;
  }
  BudgetHold& operator=(BudgetHold&& o) noexcept;
  ~BudgetHold() { release(); }

  // Takes up to `wanted` more bytes (all of them without a budget).
  std::uint64_t take(std::uint64_t wanted);
  void release();
  std::uint64_t bytes() const { return bytes_; }
  const SpoolBudget* budget() const { return budget_.get(); }

 private:
  std::shared_ptr<SpoolBudget> budget_;
  std::uint64_t bytes_ = 0;
};

}  // namespace brig::exec
