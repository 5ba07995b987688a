#include "jail/steps/cgroups.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "jail/base/fd_message.h"

namespace brig::jail::cgroups {
namespace {

// A cgroup hierarchy as this process sees it.
struct Hierarchy {
  std::string mount_point;
  std::string own_dir;  // the directory of the cgroup this process is in
};

// The fields of `s` between `sep`s, as std::getline gives them (no field
// after a trailing separator). Views into `s`: no stream, no copies.
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The whole file, or "" if it cannot be read.
std::string read_file(const std::string& path) {
  std::string text;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return text;
  char buf[4096];
  ssize_t got;
  while ((got = ::read(fd.get(), buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR))
    if (got > 0) text.append(buf, static_cast<size_t>(got));
  return text;
}

// What this process sees of cgroups: its own cgroups, read once per
// create() or sweep_stale() (a process can be moved to another cgroup at any
// time). The mounts are cgroup_mount's.
struct ProcView {
  std::string cgroup = read_file("/proc/self/cgroup");
};

// Mount point and mount root of the cgroup fs whose type is `fstype` (and,
// for v1, whose super options name `controller`), in mountinfo's `text`.
std::optional<std::pair<std::string, std::string>> scan_mounts(std::string_view text,
                                                               std::string_view fstype,
                                                               std::string_view controller) {
  for (const std::string_view line : split(text, '\n')) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const auto pre = split(line.substr(0, dash), ' ');
    const auto post = split(line.substr(dash + 3), ' ');
    if (pre.size() < 5 || post.size() < 3 || post[0] != fstype) continue;
    if (!controller.empty()) {
      bool found = false;
      for (const auto& opt : split(post[2], ','))
        if (opt == controller) found = true;
      if (!found) continue;
    }
    return std::make_pair(std::string(pre[4]), std::string(pre[3]));
  }
  return std::nullopt;
}

// scan_mounts over /proc/self/mountinfo as this process first read it, each
// answer kept. The kernel formats mountinfo afresh on every read (~60 us
// here, more than the rest of the cgroup setup), splitting it took ~400
// allocations a jail, and the cgroup hierarchies' mount points do not move
// under a running brig: a spawner reads and scans it once, not once per jail.
std::optional<std::pair<std::string, std::string>> cgroup_mount(const std::string& fstype,
                                                                const std::string& controller) {
  static std::mutex mutex;
  static const std::string text = read_file("/proc/self/mountinfo");
  static std::map<std::pair<std::string, std::string>,
                  std::optional<std::pair<std::string, std::string>>>
      known;
  const std::lock_guard lock(mutex);
  auto [it, inserted] = known.try_emplace({fstype, controller});
  if (inserted) it->second = scan_mounts(text, fstype, controller);
  return it->second;
}

// This process's cgroup path in the v1 hierarchy of `controller`, or in v2
// when `controller` is empty.
std::optional<std::string> own_path(const ProcView& view, const std::string& controller) {
  for (const std::string_view line : split(view.cgroup, '\n')) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string_view::npos || b == std::string_view::npos) continue;
    const std::string_view ctrls = line.substr(a + 1, b - a - 1);
    const std::string_view path = line.substr(b + 1);
    if (controller.empty() ? line.substr(0, a) == "0" && ctrls.empty() : false)
      return std::string(path);
    if (!controller.empty())
      for (const auto c : split(ctrls, ','))
        if (c == controller) return std::string(path);
  }
  return std::nullopt;
}

std::optional<Hierarchy> find_hierarchy(const ProcView& view, const std::string& fstype,
                                        const std::string& controller) {
  const auto mnt = cgroup_mount(fstype, controller);
  const auto own = own_path(view, controller);
  if (!mnt || !own) return std::nullopt;
  std::string rel = *own;
  // Inside a cgroup namespace the mount's root and our path are relative.
  if (mnt->second != "/" && rel.starts_with(mnt->second)) rel = rel.substr(mnt->second.size());
  if (rel == "/") rel.clear();
  Hierarchy h{mnt->first, mnt->first + rel};
  // In v2, from the leaf enter_delegated_leaf() made, the jails' groups go
  // beside it: the leaf holds processes, so it cannot hand controllers down.
  const std::string leaf = std::string("/") + kLeafName;
  if (fstype == "cgroup2" && h.own_dir.ends_with(leaf))
    h.own_dir.resize(h.own_dir.size() - leaf.size());
  return h;
}

int write_file(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return errno;
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return errno;
  return 0;
}

std::string err_text(int err) {
  return ::strerror(err);
}

std::string next_name() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

// Makes <own>/brig/<name> and opens what the jail needs (`join`: the file
// the command writes itself into); sets the limit files through
// `configure`. Returns the errno text on failure.
template <class Configure>
std::optional<std::string> make_group(Group& g, const Hierarchy& h, const char* join,
                                      Configure configure) {
  const std::string brig_dir = h.own_dir + "/brig";
  if (::mkdir(brig_dir.c_str(), 0755) != 0 && errno != EEXIST)
    return "mkdir " + brig_dir + ": " + err_text(errno);
  const std::string dir = brig_dir + "/" + g.name;
  if (::mkdir(dir.c_str(), 0755) != 0) return "mkdir " + dir + ": " + err_text(errno);
  g.paths.push_back(dir);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return "stat " + dir + ": " + err_text(errno);
  g.inos.push_back(st.st_ino);
  if (auto why = configure(dir)) return why;
  UniqueFd procs(::open((dir + "/" + join).c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs) return "open " + dir + "/" + join + ": " + err_text(errno);
  UniqueFd parent(::open(brig_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) return "open " + brig_dir + ": " + err_text(errno);
  g.procs_fds.push_back(std::move(procs));
  g.brig_dir_fds.push_back(std::move(parent));
  return std::nullopt;
}

// The limit files of a v2 group.
std::optional<std::string> write_v2_limits(const std::string& dir, const Limits& limits) {
  if (limits.pids)
    if (int e = write_file(dir + "/pids.max", std::to_string(*limits.pids)))
      return "write " + dir + "/pids.max: " + err_text(e);
  if (limits.memory_bytes) {
    if (int e = write_file(dir + "/memory.max", std::to_string(*limits.memory_bytes)))
      return "write " + dir + "/memory.max: " + err_text(e);
    write_file(dir + "/memory.swap.max", "0");  // absent without swap accounting
  }
  return std::nullopt;
}

// The limit file of a v1 group of `controller` (pids or memory).
std::optional<std::string> write_v1_limit(const std::string& dir, const std::string& controller,
                                          const Limits& limits) {
  if (controller == "pids") {
    if (int e = write_file(dir + "/pids.max", std::to_string(*limits.pids)))
      return "write " + dir + "/pids.max: " + err_text(e);
    return std::nullopt;
  }
  const std::string bytes = std::to_string(*limits.memory_bytes);
  if (int e = write_file(dir + "/memory.limit_in_bytes", bytes))
    return "write " + dir + "/memory.limit_in_bytes: " + err_text(e);
  // With swap accounting, memory+swap too, or a bomb just swaps.
  write_file(dir + "/memory.memsw.limit_in_bytes", bytes);
  return std::nullopt;
}

std::optional<std::string> try_v2(Group& g, const ProcView& view, const Limits& limits) {
  const auto h = find_hierarchy(view, "cgroup2", "");
  if (!h) return "cgroup v2: not mounted";
  const std::string controllers = read_file(h->own_dir + "/cgroup.controllers");
  const auto available = split(controllers, ' ');
  auto has = [&](std::string_view c) {
    for (auto a : available) {
      if (!a.empty() && a.back() == '\n') a.remove_suffix(1);
      if (a == c) return true;
    }
    return false;
  };
  std::string enable;
  if (limits.pids) {
    if (!has("pids")) return "cgroup v2 (" + h->own_dir + "): no pids controller";
    enable += "+pids ";
  }
  if (limits.memory_bytes) {
    if (!has("memory")) return "cgroup v2 (" + h->own_dir + "): no memory controller";
    enable += "+memory";
  }
  // brig's own group must hand the controllers down to brig/ and brig/ to
  // the jails; the kernel refuses (EBUSY) while brig's group holds brig
  // itself, unless it is a delegated subtree set up for that.
  if (int e = write_file(h->own_dir + "/cgroup.subtree_control", enable))
    return "cgroup v2: enable controllers in " + h->own_dir + ": " + err_text(e) +
           " (run brig in a delegated cgroup, e.g. systemd-run --user --scope -p Delegate=yes)";
  const std::string brig_dir = h->own_dir + "/brig";
  if (::mkdir(brig_dir.c_str(), 0755) != 0 && errno != EEXIST)
    return "cgroup v2: mkdir " + brig_dir + ": " + err_text(errno);
  if (int e = write_file(brig_dir + "/cgroup.subtree_control", enable))
    return "cgroup v2: enable controllers in " + brig_dir + ": " + err_text(e);
  auto why = make_group(g, *h, "cgroup.procs",
                        [&](const std::string& dir) { return write_v2_limits(dir, limits); });
  if (why) return "cgroup v2: " + *why;
  g.tier = LimitsTier::cgroup_v2;
  g.limits_pids = limits.pids.has_value();
  g.limits_memory = limits.memory_bytes.has_value();
  return std::nullopt;
}

std::optional<std::string> try_v1(Group& g, const ProcView& view, const std::string& controller,
                                  const Limits& limits) {
  const auto h = find_hierarchy(view, "cgroup", controller);
  if (!h) return "cgroup v1 " + controller + ": not mounted";
  // The command joins through `tasks`, as the one thread it is then: moving
  // a whole process (cgroup.procs) write-locks the kernel's global
  // cgroup_threadgroup_rwsem, which waits for an RCU grace period whenever
  // the lock was idle; that took 5-20 ms at times here (a jail costs ~3),
  // and more on a busy machine. A single thread moving itself skips the
  // lock (since Linux 6.0), and the command's later children follow it.
  auto why = make_group(g, *h, "tasks", [&](const std::string& dir) {
    return write_v1_limit(dir, controller, limits);
  });
  if (why) return "cgroup v1 " + controller + ": " + *why;
  g.tier = LimitsTier::cgroup_v1;
  (controller == "pids" ? g.limits_pids : g.limits_memory) = true;
  return std::nullopt;
}

void append(std::string& detail, const std::string& why) {
  if (!detail.empty()) detail += "; ";
  detail += why;
}

bool offers(const std::string& controllers, std::string_view c) {
  for (auto a : split(controllers, ' ')) {
    while (!a.empty() && (a.back() == '\n' || a.back() == ' ')) a.remove_suffix(1);
    if (a == c) return true;
  }
  return false;
}

}  // namespace

std::string enter_delegated_leaf() {
  const ProcView view;
  const auto h = find_hierarchy(view, "cgroup2", "");
  if (!h) return "";
  const auto own = own_path(view, "");
  if (own && own->ends_with(std::string("/") + kLeafName)) return "";  // already there
  const std::string controllers = read_file(h->own_dir + "/cgroup.controllers");
  if (!offers(controllers, "memory") || !offers(controllers, "pids")) return "";
  const std::string enabled = read_file(h->own_dir + "/cgroup.subtree_control");
  if (offers(enabled, "memory") && offers(enabled, "pids")) return "";  // handed down already
  const std::string leaf = h->own_dir + "/" + kLeafName;
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) return "";  // not delegated to us
  if (int e = write_file(leaf + "/cgroup.procs", "0"))
    return "cgroup v2: move brig into " + leaf + ": " + err_text(e);
  if (int e = write_file(h->own_dir + "/cgroup.subtree_control", "+memory +pids")) {
    write_file(h->own_dir + "/cgroup.procs", "0");
    ::rmdir(leaf.c_str());
    return "cgroup v2: enable memory and pids in " + h->own_dir + ": " + err_text(e) +
           " (another process shares brig's cgroup; start brig alone in its scope)";
  }
  return "cgroup v2: brig moved into " + leaf + "; jails get memory and pids groups in " +
         h->own_dir + "/brig";
}

namespace {

// Groups kept for reuse (reuse_empty_groups), with their fds.
struct Spares {
  std::mutex mutex;
  bool on = false;
  std::vector<Group> groups;
};
Spares& spares() {
  static Spares s;
  return s;
}

// The first bytes of `file` in the group `dir`, "" when it is empty or
// cannot be read.
std::string head_of(const std::string& dir, const char* file) {
  char buf[32];
  const UniqueFd fd(::open((dir + "/" + file).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The number `file` of the group `dir` starts with; nullopt if there is
// no such file (a controller's file where it is off: swap accounting).
std::optional<uint64_t> number_in(const std::string& dir, const char* file) {
  const std::string text = head_of(dir, file);
  if (text.empty() || text[0] < '0' || text[0] > '9') return std::nullopt;
  return std::strtoull(text.c_str(), nullptr, 10);
}

// Whether `g`'s jail has left it entirely, and at most kSpareChargeMax of
// memory, and of memory and swap, is still charged to it. No task: where it
// limits pids, pids.current is 0 (it counts every task of the group and, in
// v2, of groups below it, a zombie whose parent is outside too, which
// cgroup.procs no longer lists; the jail's tasks are in all its groups);
// else cgroup.procs lists no process (v2: cgroup.events, which counts the
// groups below too). Memory: memory+swap where swap is accounted (at least
// the memory alone), else memory. v1 groups are in create()'s order: pids,
// then memory. Two or three reads.
bool left_empty(const Group& g) {
  const auto at_most = [](std::optional<uint64_t> n, uint64_t max) { return n && *n <= max; };
  const bool v2 = g.tier == LimitsTier::cgroup_v2;
  if (g.limits_pids) {
    if (!at_most(number_in(g.paths.front(), "pids.current"), 0)) return false;
  } else if (v2) {
    if (head_of(g.paths[0], "cgroup.events").find("populated 0") == std::string::npos) return false;
  } else {
    for (const auto& dir : g.paths) {
      const UniqueFd procs(::open((dir + "/cgroup.procs").c_str(), O_RDONLY | O_CLOEXEC));
      char c;
      if (!procs || ::read(procs.get(), &c, 1) != 0) return false;
    }
  }
  if (!g.limits_memory) return true;
  const std::string& dir = g.paths.back();
  if (v2) {
    const auto swap = number_in(dir, "memory.swap.current");
    return at_most(number_in(dir, "memory.current"), kSpareChargeMax) &&
           (!swap || *swap <= kSpareChargeMax);
  }
  if (const auto both = number_in(dir, "memory.memsw.usage_in_bytes"))
    return *both <= kSpareChargeMax;
  return at_most(number_in(dir, "memory.usage_in_bytes"), kSpareChargeMax);
}

// Keeps `g` as a spare if reuse is on and its jail has left it.
bool keep_as_spare(Group& g) {
  Spares& s = spares();
  const std::lock_guard lock(s.mutex);
  const size_t n = g.paths.size();
  if (!s.on || !g.launcher_keeps || n == 0 || g.procs_fds.size() != n ||
      g.brig_dir_fds.size() != n || s.groups.size() >= static_cast<size_t>(kMaxSpares) ||
      !left_empty(g))
    return false;
  s.groups.push_back(std::move(g));
  g = Group{};
  return true;
}

// Whether the limit files of `g` read as create() wrote them for `limits`
// (a swap limit the kernel does not have reads as it was written).
bool limits_as_written(const Group& g, const Limits& limits) {
  // head_of's "" is a file that is not there.
  const auto value_of = [](const std::string& dir, const char* file) {
    std::string now = head_of(dir, file);
    while (!now.empty() && now.back() == '\n') now.pop_back();
    return now;
  };
  const auto reads = [&](const std::string& dir, const char* file, const std::string& value) {
    return value_of(dir, file) == value;
  };
  const auto absent_or = [&](const std::string& dir, const char* file, const std::string& value) {
    const std::string now = value_of(dir, file);
    return now.empty() || now == value;
  };
  const std::string pids = limits.pids ? std::to_string(*limits.pids) : "";
  // The kernel keeps memory limits in whole pages.
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::string bytes =
      limits.memory_bytes ? std::to_string(*limits.memory_bytes / page * page) : "";
  if (g.tier == LimitsTier::cgroup_v2) {
    const std::string& dir = g.paths[0];
    return (!g.limits_pids || reads(dir, "pids.max", pids)) &&
           (!g.limits_memory ||
            (reads(dir, "memory.max", bytes) && absent_or(dir, "memory.swap.max", "0")));
  }
  return (!g.limits_pids || reads(g.paths.front(), "pids.max", pids)) &&
         (!g.limits_memory || (reads(g.paths.back(), "memory.limit_in_bytes", bytes) &&
                               absent_or(g.paths.back(), "memory.memsw.limit_in_bytes", bytes)));
}

// A spare made for these limits, still there, its limits written again;
// nullopt if none.
std::optional<Group> take_spare(const Limits& limits) {
  for (;;) {
    Group g;
    {
      Spares& s = spares();
      const std::lock_guard lock(s.mutex);
      const auto it = std::find_if(s.groups.begin(), s.groups.end(), [&](const Group& spare) {
        return spare.asked_pids == limits.pids && spare.asked_memory == limits.memory_bytes;
      });
      if (it == s.groups.end()) return std::nullopt;
      g = std::move(*it);
      s.groups.erase(it);
    }
    // Removed behind brig's back (an administrator's rmdir of an empty
    // group), and perhaps another made with its name: the jail could not
    // join it (its join file would fail with ENODEV).
    bool usable = g.inos.size() == g.brig_dir_fds.size();
    struct stat st;
    for (size_t i = 0; usable && i < g.brig_dir_fds.size(); ++i)
      usable = ::fstatat(g.brig_dir_fds[i].get(), g.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               st.st_ino == g.inos[i];
    // The limits read back, and written again if any differs: whatever
    // changed them since (no jail can reach its group's files), the next jail
    // gets the limits it asked for. (Reading is cheap; a v1 memory limit
    // written costs ~20 us.) v1 groups are in create()'s order: pids, then
    // memory.
    if (usable && !limits_as_written(g, limits)) {
      if (g.tier == LimitsTier::cgroup_v2) usable = !write_v2_limits(g.paths[0], limits);
      if (usable && g.tier == LimitsTier::cgroup_v1 && g.limits_pids)
        usable = !write_v1_limit(g.paths.front(), "pids", limits);
      if (usable && g.tier == LimitsTier::cgroup_v1 && g.limits_memory)
        usable = !write_v1_limit(g.paths.back(), "memory", limits);
    }
    if (usable) return g;
    g.launcher_keeps = false;  // not kept again
    remove(g);
  }
}

}  // namespace

void reuse_empty_groups(bool on) {
  std::vector<Group> dropped;
  {
    Spares& s = spares();
    const std::lock_guard lock(s.mutex);
    s.on = on;
    if (!on) dropped.swap(s.groups);
  }
  for (Group& g : dropped) remove(g);
}

Group create(const Limits& limits) {
  Group g;
  if (!limits.pids && !limits.memory_bytes) return g;
  if (auto spare = take_spare(limits)) return std::move(*spare);
  const ProcView view;
  g.name = next_name();
  auto why_v2 = try_v2(g, view, limits);
  if (why_v2) {
    remove(g);
    g = Group{};
    g.name = next_name();
    append(g.detail, *why_v2);
    if (limits.pids)
      if (auto why = try_v1(g, view, "pids", limits)) append(g.detail, *why);
    if (limits.memory_bytes)
      if (auto why = try_v1(g, view, "memory", limits)) append(g.detail, *why);
    if (g.tier == LimitsTier::none) remove(g);
  }
  if (g.tier == LimitsTier::none) return g;
  // Only a group that sets every limit asked is kept for reuse (those of a
  // failed tier are gone already): one half made (a v1 controller failed)
  // is made whole again, or refused, for the next jail.
  if (g.limits_pids != limits.pids.has_value() ||
      g.limits_memory != limits.memory_bytes.has_value())
    return g;
  g.asked_pids = limits.pids;
  g.asked_memory = limits.memory_bytes;
  Spares& s = spares();
  const std::lock_guard lock(s.mutex);
  g.launcher_keeps = s.on;
  return g;
}

LimitsEnforcement probe(const Limits& limits) {
  Group g = create(limits);
  LimitsEnforcement e;
  e.tier = g.tier == LimitsTier::none && (limits.pids || limits.memory_bytes) ? LimitsTier::rlimits
                                                                              : g.tier;
  e.memory_whole = !limits.memory_bytes || g.limits_memory;
  e.pids_whole = !limits.pids || g.limits_pids;
  e.detail = g.detail;
  remove(g);
  return e;
}

namespace {

// remove()'s busy groups while removals are deferred.
struct Busy {
  std::string path;
  std::chrono::steady_clock::time_point since;
};
struct Deferred {
  std::mutex mutex;
  bool on = false;
  std::vector<Busy> busy;
  std::chrono::steady_clock::time_point next_try;
};
Deferred& deferred() {
  static Deferred d;
  return d;
}
// Exiting tasks leave within milliseconds: tried again that often.
constexpr auto kRetryEvery = std::chrono::milliseconds(10);
constexpr auto kGiveUpAfter = std::chrono::seconds(60);

}  // namespace

void remove(Group& g) {
  if (keep_as_spare(g)) return;
  g.procs_fds.clear();
  g.brig_dir_fds.clear();
  const auto now = std::chrono::steady_clock::now();
  {
    Deferred& d = deferred();
    const std::lock_guard lock(d.mutex);
    if (d.on) {
      for (const auto& p : g.paths)
        if (::rmdir(p.c_str()) != 0 && errno == EBUSY) {
          if (d.busy.empty()) d.next_try = now + kRetryEvery;
          d.busy.push_back({p, now});
        }
      g.paths.clear();
      return;
    }
  }
  const auto deadline = now + std::chrono::seconds(2);
  for (const auto& p : g.paths) {
    // Tasks killed with the jail may still be leaving the group.
    while (::rmdir(p.c_str()) != 0 && errno == EBUSY && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  g.paths.clear();
}

void defer_busy_removals(bool on) {
  Deferred& d = deferred();
  const std::lock_guard lock(d.mutex);
  d.on = on;
}

std::optional<std::chrono::steady_clock::time_point> retry_deferred(
    std::vector<std::string>* given_up) {
  Deferred& d = deferred();
  const std::lock_guard lock(d.mutex);
  if (d.busy.empty()) return std::nullopt;
  const auto now = std::chrono::steady_clock::now();
  if (now < d.next_try) return d.next_try;
  std::erase_if(d.busy, [&](const Busy& b) {
    if (::rmdir(b.path.c_str()) == 0 || errno != EBUSY) return true;
    if (now - b.since < kGiveUpAfter) return false;
    if (given_up) given_up->push_back(b.path);
    return true;
  });
  if (d.busy.empty()) return std::nullopt;
  d.next_try = now + kRetryEvery;
  return d.next_try;
}

void finish_deferred() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (auto at = retry_deferred(nullptr)) {
    if (*at > deadline) break;
    std::this_thread::sleep_until(*at);
  }
}

int sweep_stale() {
  int removed = 0;
  const ProcView view;
  std::vector<Hierarchy> hs;
  if (auto h = find_hierarchy(view, "cgroup2", "")) hs.push_back(*h);
  for (const char* c : {"pids", "memory"})
    if (auto h = find_hierarchy(view, "cgroup", c)) hs.push_back(*h);
  for (const auto& h : hs) {
    const std::string brig_dir = h.own_dir + "/brig";
    DIR* d = ::opendir(brig_dir.c_str());
    if (!d) continue;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      const size_t dash = name.find('-');
      if (e->d_type != DT_DIR || dash == std::string::npos || dash == 0) continue;
      const pid_t owner =
          static_cast<pid_t>(std::strtol(name.substr(0, dash).c_str(), nullptr, 10));
      if (owner <= 0 || ::kill(owner, 0) == 0 || errno != ESRCH) continue;
      // rmdir refuses a group that still holds a process: only empty ones go.
      if (::rmdir((brig_dir + "/" + name).c_str()) == 0) ++removed;
    }
    ::closedir(d);
  }
  return removed;
}

int send_to_child(int sock, const Group& g) {
  const size_t n = g.procs_fds.size();
  if (n > static_cast<size_t>(Received::kMaxGroups) || g.brig_dir_fds.size() != n) return EINVAL;
  Received r;
  if (g.name.size() >= sizeof r.name) return ENAMETOOLONG;
  r.count = static_cast<int>(n);
  r.limits_pids = g.limits_pids;
  r.limits_memory = g.limits_memory;
  r.launcher_keeps = g.launcher_keeps;
  ::memcpy(r.name, g.name.data(), g.name.size());
  int fds[2 * Received::kMaxGroups];
  for (size_t i = 0; i < n; ++i) {
    fds[i] = g.procs_fds[i].get();
    fds[n + i] = g.brig_dir_fds[i].get();
  }
  return send_with_fds(sock, &r, sizeof r, fds, 2 * n);
}

static_assert(2 * Received::kMaxGroups <= kMaxMessageFds);

int receive_in_child(int sock, Received* out) {
  int fds[kMaxMessageFds];
  size_t nfds = 0;
  if (int e = receive_with_fds(sock, out, sizeof *out, fds, &nfds)) return e;
  if (out->count < 0 || out->count > Received::kMaxGroups) return EPROTO;
  out->name[sizeof out->name - 1] = 0;
  const size_t n = static_cast<size_t>(out->count);
  if (n == 0) return 0;
  if (nfds != 2 * n) return EPROTO;
  ::memcpy(out->procs_fds, fds, n * sizeof(int));
  ::memcpy(out->dir_fds, fds + n, n * sizeof(int));
  return 0;
}

int join_in_child(const Received& groups, int* failed) {
  for (int i = 0; i < groups.count; ++i)
    if (::write(groups.procs_fds[i], "0", 1) != 1) {
      *failed = i;
      return errno;
    }
  return 0;
}

int remove_in_child(const Received& groups) {
  if (groups.launcher_keeps) return groups.count;
  int left = 0;
  for (int i = 0; i < groups.count; ++i)
    if (::unlinkat(groups.dir_fds[i], groups.name, AT_REMOVEDIR) != 0) ++left;
  return left;
}

}  // namespace brig::jail::cgroups
