// Timing helpers the benchmark programs share: a clock, elapsed milliseconds,
// and the median with the p10/p90 spread of a sample.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace brig::bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Stats {
  double median = 0, p10 = 0, p90 = 0;
  std::size_t n = 0;
};

// All zero for an empty sample.
inline Stats stats(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() / 10], v[v.size() * 9 / 10], v.size()};
}

}  // namespace brig::bench
