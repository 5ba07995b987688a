#include "server/search/thread_start.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace brig::search {
namespace {

// A walk's reading thread must start on another CPU than the walk's, which
// keeps working meanwhile; left to the scheduler after an idle spell, it
// waits on the walk's CPU for milliseconds. Once running it may use every
// CPU again.
TEST(StartThreadElsewhere, StartsOnAnotherCpuThenMayUseThemAll) {
  cpu_set_t mine;
  ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: nowhere else to start";
  int elsewhere = 0;
  for (int i = 0; i < 10; ++i) {
    // Idle first: that is when the scheduler keeps a new thread at home.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const int here = ::sched_getcpu();
    std::atomic<int> started_on{-1};
    cpu_set_t theirs;
    CPU_ZERO(&theirs);
    std::thread t = start_thread_elsewhere([&] {
      started_on = ::sched_getcpu();
      ::sched_getaffinity(0, sizeof theirs, &theirs);
    });
    // Busy, as a walk's thread is, until the new thread has run.
    while (started_on.load() < 0) {
    }
    t.join();
    if (started_on.load() != here) ++elsewhere;
    EXPECT_TRUE(CPU_EQUAL(&theirs, &mine)) << "the narrowed mask stuck";
  }
  EXPECT_GE(elsewhere, 9);
}

}  // namespace
}  // namespace brig::search
