// ProgressPacer: when to send the output a running command wrote as a
// progress notification. One notification per output chunk would flood the
// client (a chatty build writes thousands of small chunks a second), so new
// output is batched: sent once `batch_bytes` are waiting or `interval` after
// the last send, whichever comes first. Streaming stops after `budget_bytes`
// (the result and `job read` still have everything): a 50 MiB flood must
// not become 50 MiB of notifications.
#pragma once

#include <chrono>
#include <cstddef>

namespace brig::exec {

class ProgressPacer {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::chrono::milliseconds interval{100};
    std::size_t batch_bytes = 4096;
    std::size_t budget_bytes = 256 * 1024;
  };

  explicit ProgressPacer(Clock::time_point start);
  ProgressPacer(Clock::time_point start, Options options);

  // Whether `pending` bytes waiting at `now` should be sent now.
  bool due(std::size_t pending, Clock::time_point now) const;
  // When pending bytes (if any) become due by time alone.
  Clock::time_point next_due(std::size_t pending) const;
  // How many of `pending` bytes may still be streamed.
  std::size_t allowance(std::size_t pending) const;
  // Records a send of `bytes` at now.
  void sent(std::size_t bytes, Clock::time_point now);
  bool exhausted() const { return streamed_ >= options_.budget_bytes; }
  std::size_t streamed() const { return streamed_; }

 private:
  Options options_;
  Clock::time_point last_;
  std::size_t streamed_ = 0;
};

}  // namespace brig::exec
