// Spool: what one output stream of a job wrote, kept within a bound so that
// a flood cannot exhaust the server. The first `head_bytes` are kept in a
// memfd (shared memory the kernel can swap, outside brig's heap) and the last
// `tail_bytes` in a ring in memory; what lies between is counted, not kept.
// Offsets are absolute byte positions in the stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "server/exec/spool_budget.h"

namespace brig::exec {

struct SpoolLimits {
  std::uint64_t head_bytes = std::uint64_t{64} << 20;
  std::size_t tail_bytes = std::size_t{1} << 20;
  // The server's total for every spool's head (null: none); the head stops
  // where the budget has no more room.
  std::shared_ptr<SpoolBudget> budget;
};

class Spool {
 public:
  // A spool whose memfd is named for `name` (shown in /proc/PID/fd only).
  static Result<Spool> create(const std::string& name, SpoolLimits limits = {});

  Spool(Spool&&) noexcept = default;
  Spool& operator=(Spool&&) noexcept = default;

  Result<void> append(std::string_view bytes);

  // Bytes written so far, kept or not.
  std::uint64_t size() const { return size_; }
  // The kept ranges are [0, head_end()) and [tail_begin(), size()); when
  // head_end() < tail_begin() the bytes between were dropped.
  std::uint64_t head_end() const;
  std::uint64_t tail_begin() const;
  bool kept(std::uint64_t offset) const { return offset < head_end() || offset >= tail_begin(); }

  const SpoolLimits& limits() const { return limits_; }
  // Whether the head stopped early because the server's budget was full.
  bool cut_by_budget() const { return cut_by_budget_; }
  // Frees the kept output and gives its bytes back to the budget (the job
  // table evicts a finished job's output so); reads then fail and say so.
  void evict();
  bool evicted() const { return evicted_; }

  // Up to max_bytes from offset, as far as the kept bytes run without a gap;
  // empty at or past size(). Fails when offset lies in the dropped range.
  Result<std::string> read(std::uint64_t offset, std::size_t max_bytes) const;

 private:
  Spool(UniqueFd fd, SpoolLimits limits);

  UniqueFd fd_;
  SpoolLimits limits_;
  std::uint64_t size_ = 0;
  std::string ring_;  // byte at offset o sits at ring_[o % tail_bytes]; grows to tail_bytes
  std::uint64_t head_cap_ = 0;  // limits_.head_bytes, or less once the budget was full
  BudgetHold held_;             // the head's bytes, from limits_.budget
  bool cut_by_budget_ = false;
  bool evicted_ = false;
};

}  // namespace brig::exec
