#include "server/exec/progress_pacer.h"

#include <algorithm>

namespace brig::exec {

ProgressPacer::ProgressPacer(Clock::time_point start) : ProgressPacer(start, Options{}) {}

ProgressPacer::ProgressPacer(Clock::time_point start, Options options)
    : options_(options), last_(start) {}

bool ProgressPacer::due(std::size_t pending, Clock::time_point now) const {
  if (pending == 0 || exhausted()) return false;
  return pending >= options_.batch_bytes || now >= last_ + options_.interval;
}

ProgressPacer::Clock::time_point ProgressPacer::next_due(std::size_t pending) const {
  if (pending == 0 || exhausted()) return Clock::time_point::max();
  return last_ + options_.interval;
}

std::size_t ProgressPacer::allowance(std::size_t pending) const {
  return std::min(pending, options_.budget_bytes - std::min(streamed_, options_.budget_bytes));
}

void ProgressPacer::sent(std::size_t bytes, Clock::time_point now) {
  streamed_ += bytes;
  last_ = now;
}

}  // namespace brig::exec
