#include "server/exec/spool_budget.h"

#include <algorithm>

namespace brig::exec {

std::uint64_t SpoolBudget::take(std::uint64_t wanted) {
  const std::uint64_t free_now = limit_ > used_ ? limit_ - used_ : 0;
  if (wanted > free_now && make_room) make_room(wanted - free_now);
  const std::uint64_t taken = std::min(wanted, limit_ > used_ ? limit_ - used_ : 0);
  used_ += taken;
  return taken;
}

void SpoolBudget::give_back(std::uint64_t bytes) {
  used_ -= std::min(bytes, used_);
}

BudgetHold& BudgetHold::operator=(BudgetHold&& o) noexcept {
  if (this != &o) {
    release();
    budget_ = std::move(o.budget_);
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

std::uint64_t BudgetHold::take(std::uint64_t wanted) {
  const std::uint64_t taken = budget_ ? budget_->take(wanted) : wanted;
  bytes_ += taken;
  return taken;
}

void BudgetHold::release() {
  if (budget_) budget_->give_back(bytes_);
  bytes_ = 0;
}

}  // namespace brig::exec
