#include "server/exec/progress_pacer.h"

#include <gtest/gtest.h>

namespace brig::exec {
namespace {

using namespace std::chrono_literals;
using Clock = ProgressPacer::Clock;

const Clock::time_point t0 = Clock::time_point() + 1000s;

TEST(ProgressPacer, BatchesSmallOutputByTime) {
  ProgressPacer p(t0, {.interval = 100ms, .batch_bytes = 4096, .budget_bytes = 1 << 20});
  EXPECT_FALSE(p.due(0, t0 + 1s));  // nothing to send
  EXPECT_FALSE(p.due(10, t0 + 50ms));
  EXPECT_EQ(p.next_due(10), t0 + 100ms);
  EXPECT_TRUE(p.due(10, t0 + 100ms));
  p.sent(10, t0 + 120ms);
  EXPECT_FALSE(p.due(10, t0 + 200ms));
  EXPECT_TRUE(p.due(10, t0 + 220ms));
  EXPECT_EQ(p.next_due(0), Clock::time_point::max());
}

TEST(ProgressPacer, SendsAFullBatchAtOnce) {
  ProgressPacer p(t0, {.interval = 100ms, .batch_bytes = 4096, .budget_bytes = 1 << 20});
  EXPECT_FALSE(p.due(4095, t0 + 1ms));
  EXPECT_TRUE(p.due(4096, t0 + 1ms));
}

TEST(ProgressPacer, StopsAtTheBudget) {
  ProgressPacer p(t0, {.interval = 100ms, .batch_bytes = 10, .budget_bytes = 25});
  EXPECT_EQ(p.allowance(100), 25u);
  p.sent(20, t0);
  EXPECT_EQ(p.allowance(100), 5u);
  EXPECT_EQ(p.allowance(3), 3u);
  p.sent(5, t0);
  EXPECT_TRUE(p.exhausted());
  EXPECT_EQ(p.allowance(100), 0u);
  EXPECT_FALSE(p.due(100, t0 + 1s));
  EXPECT_EQ(p.next_due(100), Clock::time_point::max());
}

}  // namespace
}  // namespace brig::exec
