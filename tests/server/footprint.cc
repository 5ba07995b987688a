#include "tests/server/footprint.h"

#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

namespace brig::server::testing {
namespace {

constexpr const char* kNamespaceKinds[] = {"cgroup", "ipc",  "mnt",  "net",
                                           "pid",    "time", "user", "uts"};

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid > 0 && *end == '\0') out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

struct Stat {
  char state = '?';
  pid_t ppid = 0;
  unsigned long long start = 0;
  std::string comm;
};

// /proc/<pid>/stat: the command name is in parentheses and may hold
// spaces, so the fields are counted from the last ')'.
std::optional<Stat> stat_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  Stat s;
  s.comm = line.substr(open + 1, close - open - 1);
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;
  for (std::string x; fields >> x;) f.push_back(x);
  if (f.size() < 20) return std::nullopt;
  s.state = f[0][0];
  s.ppid = static_cast<pid_t>(std::stol(f[1]));
  s.start = std::stoull(f[19]);  // field 22, starttime
  return s;
}

std::string read_link(const std::string& path) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::set<std::string> own_namespaces() {
  std::set<std::string> out;
  for (const char* kind : kNamespaceKinds) {
    const std::string ns = read_link(std::string("/proc/self/ns/") + kind);
    if (!ns.empty()) out.insert(ns);
  }
  return out;
}

// The host directory of each of pid's cgroups, by hierarchy: "0" for
// cgroup v2, otherwise the controllers ("pids", "memory"), from
// /proc/<pid>/cgroup and where this process sees each hierarchy mounted.
std::map<std::string, std::string> cgroup_dirs_of(pid_t pid) {
  struct Mount {
    std::string root, point, fstype;
    std::set<std::string> options;
  };
  std::vector<Mount> mounts;
  {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
      std::istringstream s(line);
      std::vector<std::string> f;
      for (std::string x; s >> x;) f.push_back(x);
      const auto dash = std::find(f.begin(), f.end(), "-");
      // "... root mountpoint ... - fstype source superoptions"
      if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
      Mount m{f[3], f[4], dash[1], {}};
      if (m.fstype != "cgroup" && m.fstype != "cgroup2") continue;
      std::istringstream opts(dash[3]);
      for (std::string o; std::getline(opts, o, ',');) m.options.insert(o);
      mounts.push_back(std::move(m));
    }
  }
  std::map<std::string, std::string> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':');
    const auto b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    const bool v2 = controllers.empty();
    if (!v2 && controllers != "pids" && controllers != "memory") continue;
    for (const Mount& m : mounts) {
      if (v2 != (m.fstype == "cgroup2") || (!v2 && !m.options.contains(controllers))) continue;
      std::string rel = path;
      if (m.root != "/") {
        if (!rel.starts_with(m.root)) continue;
        rel = rel.substr(m.root.size());
      }
      out[v2 ? "0" : controllers] = m.point + (rel == "/" ? "" : rel);
      break;
    }
  }
  return out;
}

// Clock ticks since boot, as /proc/<pid>/stat gives a process's start.
unsigned long long now_in_ticks() {
  timespec t{};
  ::clock_gettime(CLOCK_BOOTTIME, &t);
  const auto hz = static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK));
  return static_cast<unsigned long long>(t.tv_sec) * hz +
         static_cast<unsigned long long>(t.tv_nsec) * hz / 1000000000ull;
}

}  // namespace

Footprint footprint_of(pid_t root) {
  std::map<pid_t, Stat> stats;
  for (pid_t pid : all_pids())
    if (auto s = stat_of(pid)) stats[pid] = *s;
  Footprint f;
  f.taken = now_in_ticks();
  std::vector<pid_t> todo{root};
  std::set<pid_t> seen;
  while (!todo.empty()) {
    const pid_t pid = todo.back();
    todo.pop_back();
    if (!seen.insert(pid).second || !stats.contains(pid)) continue;
    f.processes.push_back({pid, stats[pid].start, stats[pid].comm});
    for (const auto& [child, s] : stats)
      if (s.ppid == pid) todo.push_back(child);
  }
  const std::set<std::string> own = own_namespaces();
  for (const ProcessId& p : f.processes) {
    int read = 0;
    for (const char* kind : kNamespaceKinds) {
      const std::string ns = read_link("/proc/" + std::to_string(p.pid) + "/ns/" + kind);
      if (ns.empty()) continue;
      ++read;
      if (!own.contains(ns)) f.namespaces.insert(ns);
    }
    if (read == 0) ++f.unreadable_namespaces;
    for (const auto& [hierarchy, dir] : cgroup_dirs_of(p.pid))
      if (dir.find("/brig/") != std::string::npos) f.cgroup_dirs.insert(dir);
  }
  for (const auto& [hierarchy, dir] : cgroup_dirs_of(root)) f.brig_dirs.push_back(dir + "/brig");
  return f;
}

std::vector<ProcessId> still_running(const Footprint& f) {
  std::vector<ProcessId> out;
  for (const ProcessId& p : f.processes) {
    auto s = stat_of(p.pid);
    if (s && s->start == p.start && s->state != 'Z' && s->state != 'X') out.push_back(p);
  }
  return out;
}

// A group a brig-spawner still running keeps for its next jail, or has
// handed to it (jail::cgroups::reuse_empty_groups): named for that spawner,
// and every process in it is of a jail that spawner started after `taken`
// (its parents lead to a child of the spawner that started later: the next
// jail's init). A process of the killed jail that outlived it, whenever it
// started, leads elsewhere and counts. Once that spawner is gone, its groups
// count again.
bool kept_by_live_spawner(const std::filesystem::path& dir, unsigned long long taken) {
  const std::string name = dir.filename();
  const pid_t owner = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
  const auto spawner = owner > 0 ? stat_of(owner) : std::nullopt;
  if (!spawner || spawner->comm != "brig-spawner" || spawner->state == 'Z') return false;
  std::ifstream procs(dir / "cgroup.procs");
  if (!procs) return false;
  for (pid_t pid; procs >> pid;) {
    auto st = stat_of(pid);
    for (int depth = 0; st && st->ppid != owner && st->ppid > 1 && depth < 64; ++depth) {
      pid = st->ppid;
      st = stat_of(pid);
    }
    if (!st || st->ppid != owner || st->start <= taken) return false;
  }
  return true;
}

std::vector<std::string> left_of(const Footprint& f) {
  std::vector<std::string> left;
  for (const ProcessId& p : still_running(f))
    left.push_back("process " + std::to_string(p.pid) + " (" + p.comm + ")");
  if (!f.namespaces.empty()) {
    std::set<std::string> held;
    for (pid_t pid : all_pids()) {
      const std::string base = "/proc/" + std::to_string(pid);
      for (const char* kind : kNamespaceKinds) {
        const std::string ns = read_link(base + "/ns/" + kind);
        if (!f.namespaces.contains(ns)) continue;
        const auto st = stat_of(pid);
        if (st && st->start > f.taken) continue;  // a new namespace with a freed number
        held.insert(ns + " by process " + std::to_string(pid) + " (" +
                    (st ? st->comm + ", state " + st->state + ", started " +
                              std::to_string(st->start) + ", footprint at " +
                              std::to_string(f.taken)
                        : std::string("gone")) +
                    ")");
      }
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(base + "/fd", ec)) {
        const std::string ns = read_link(e.path());
        if (f.namespaces.contains(ns)) held.insert(ns + " by an fd of " + std::to_string(pid));
      }
    }
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);)
      for (const std::string& ns : f.namespaces)
        if (line.find(ns) != std::string::npos) held.insert(ns + " by a mount: " + line);
    for (const std::string& h : held) left.push_back("namespace " + h);
  }
  for (const std::string& dir : f.cgroup_dirs)
    if (std::filesystem::exists(dir) && !kept_by_live_spawner(dir, f.taken))
      left.push_back("cgroup " + dir);
  for (const std::string& brig : f.brig_dirs) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(brig, ec)) {
      const std::string name = e.path().filename();
      for (const ProcessId& p : f.processes)
        if (name.starts_with(std::to_string(p.pid) + "-") && !f.cgroup_dirs.contains(e.path()) &&
            !kept_by_live_spawner(e.path(), f.taken))
          left.push_back("cgroup " + e.path().string());
    }
  }
  return left;
}

std::vector<std::string> brig_temp_files(const std::string& dir) {
  static const std::regex temp(R"(\..*\.brig-[0-9a-f]{16})");
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (std::regex_match(it->path().filename().string(), temp)) out.push_back(it->path());
  }
  return out;
}

}  // namespace brig::server::testing
