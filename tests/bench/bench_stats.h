// Timing helpers the benchmark programs share: a clock, elapsed milliseconds,
// the median with the p10/p90 spread of a sample, and the machine's load.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <string>
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

// The 1, 5 and 15 minute load averages as /proc/loadavg has them
// ("0.52 0.58 0.59"), to print beside figures from a shared machine.
inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace brig::bench
