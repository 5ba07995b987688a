#include "server/search/cpu_limit.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace brig::search {
namespace {

std::optional<std::uint64_t> number(std::string_view s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::optional<std::size_t> cores_of(std::uint64_t quota, std::uint64_t period) {
  if (period == 0 || quota == 0) return std::nullopt;
  return static_cast<std::size_t>((quota + period - 1) / period);
}

std::optional<std::size_t> tighter(std::optional<std::size_t> a, std::optional<std::size_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace

std::optional<std::size_t> cores_of_cpu_max(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
  const std::size_t space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto quota = number(line.substr(0, space));  // "max": no number, no quota
  const auto period = number(line.substr(space + 1));
  if (!quota || !period) return std::nullopt;
  return cores_of(*quota, *period);
}

std::optional<std::size_t> cgroup_cpu_limit() {
  // /proc/self/cgroup: "0::/a/b" (v2) and "N:cpu,cpuacct:/a/b" (v1).
  std::ifstream in("/proc/self/cgroup");
  std::optional<std::size_t> limit;
  for (std::string line; std::getline(in, line);) {
    const std::size_t c1 = line.find(':');
    const std::size_t c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string path = line.substr(c2 + 1);
    const bool v2 = controllers.empty();
    std::string mount;
    if (v2) {
      mount = "/sys/fs/cgroup";
    } else {
      std::stringstream list(controllers);
      bool cpu = false;
      for (std::string c; std::getline(list, c, ',');) cpu = cpu || c == "cpu";
      if (!cpu) continue;
      mount = "/sys/fs/cgroup/" + controllers;
    }
    // A quota on any ancestor caps every group below it.
    for (;;) {
      const std::string dir = mount + (path == "/" ? "" : path);
      if (v2) {
        limit = tighter(limit, cores_of_cpu_max(first_line(dir + "/cpu.max")));
      } else {
        const auto quota = number(first_line(dir + "/cpu.cfs_quota_us"));  // -1: none
        const auto period = number(first_line(dir + "/cpu.cfs_period_us"));
        if (quota && period) limit = tighter(limit, cores_of(*quota, *period));
      }
      if (path.empty() || path == "/") break;
      path = path.substr(0, path.rfind('/'));
      if (path.empty()) path = "/";
    }
  }
  return limit;
}

std::optional<std::size_t> cpu_limit_from_env() {
  const char* v = std::getenv(kCpuLimitEnv);
  if (v == nullptr) return std::nullopt;
  const auto n = number(v);
  if (!n || *n == 0) return std::nullopt;
  return static_cast<std::size_t>(*n);
}

}  // namespace brig::search
