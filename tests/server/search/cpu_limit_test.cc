#include "server/search/cpu_limit.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include "server/search/file_prefetch.h"

namespace brig::search {
namespace {

// A quota of 1.5 CPUs lets two threads run; "max" is no quota at all.
TEST(CpuLimit, CpuMaxRoundsUpToWholeCores) {
  EXPECT_EQ(cores_of_cpu_max("150000 100000\n"), 2u);
  EXPECT_EQ(cores_of_cpu_max("100000 100000"), 1u);
  EXPECT_EQ(cores_of_cpu_max("50000 100000"), 1u);
  EXPECT_EQ(cores_of_cpu_max("max 100000"), std::nullopt);
  EXPECT_EQ(cores_of_cpu_max(""), std::nullopt);
  EXPECT_EQ(cores_of_cpu_max("12 0"), std::nullopt);
}

// The worker's searches take no more threads than the quota the server
// passed, and a malformed value is no limit.
TEST(CpuLimit, TheServersQuotaCapsTheSearchThreads) {
  ::unsetenv(kCpuLimitEnv);
  const std::size_t free = usable_cores();
  ::setenv(kCpuLimitEnv, "1", 1);
  EXPECT_EQ(usable_cores(), 1u);
  ::setenv(kCpuLimitEnv, "1000", 1);
  EXPECT_EQ(usable_cores(), free);
  ::setenv(kCpuLimitEnv, "two", 1);
  EXPECT_EQ(usable_cores(), free);
  ::unsetenv(kCpuLimitEnv);
}

}  // namespace
}  // namespace brig::search
