// brig-jail-bench: `brig run -- /bin/true` against bubblewrap doing the same
// (user, mount, pid, ipc, uts, net and cgroup namespaces; the mounts of the
// JailSpec brig plans for the default policy; brig's own seccomp programs),
// alternating A B A B in one run; then brig's setup split by step (stamped
// inside the launcher and the jail), and the PSS of brig's and bwrap's own
// processes while a command runs. Not a test: it passes or fails nothing.
// Run tests/bench/run_jail_bench.sh.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "jail/launcher.h"
#include "tests/bench/bench_stats.h"
#include "tests/bench/bwrap_peer.h"

namespace {

using brig::bench::Clock;
using brig::bench::ms_since;
using brig::bench::Stats;
using brig::bench::stats;
namespace jail = brig::jail;
using brig::bench::bwrap_args;
using brig::bench::Command;
using brig::bench::finish;
using brig::bench::plan_default;
using brig::bench::Planned;
using brig::bench::seccomp_fds;
using brig::bench::start;

struct Options {
  std::string brig;
  std::string bwrap = "/usr/bin/bwrap";
  std::string workspace;  // empty: a temporary directory
  int runs = 200;
  int warmup = 10;
  bool pooled_only = false;  // --only pooled
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "brig-jail-bench: %s\n", why.c_str());
  std::exit(1);
}

// Wall time of one start-to-exit, checking the exit status.
double time_one(const Command& c, int expect = 0) {
  const auto t0 = Clock::now();
  const int status = finish(start(c));
  const double ms = ms_since(t0);
  if (status != expect)
    die(c.argv[0] + " exited " + std::to_string(status) + " (expected " + std::to_string(expect) +
        "); run it by hand to see why");
  return ms;
}

// Pss and Rss (KiB) of one process; nullopt when unreadable.
struct Memory {
  long pss_kib = 0, rss_kib = 0;
};
std::optional<Memory> memory_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  Memory m;
  bool any = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Pss:")) m.pss_kib = std::atol(line.c_str() + 4), any = true;
    if (line.starts_with("Rss:")) m.rss_kib = std::atol(line.c_str() + 4);
  }
  if (!any) return std::nullopt;
  return m;
}

std::vector<pid_t> children_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> out;
  pid_t c;
  while (in >> c) out.push_back(c);
  return out;
}

std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string c;
  std::getline(in, c);
  return c;
}

// Starts `c` (which runs `sleep 2` in its jail), waits until the sleep runs,
// and sums the memory of every process of the tree but the sleep itself.
struct TreeMemory {
  long pss_kib = 0, rss_kib = 0;
  int processes = 0;
  std::string unreadable;  // processes whose smaps_rollup could not be read
};
TreeMemory memory_while_running(const Command& c) {
  const pid_t root = start(c);
  TreeMemory total;
  std::vector<pid_t> tree;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  for (bool found = false; !found && Clock::now() < deadline;) {
    tree.clear();
    std::vector<pid_t> unvisited = {root};
    while (!unvisited.empty()) {
      const pid_t p = unvisited.back();
      unvisited.pop_back();
      if (comm_of(p) == "sleep") {
        found = true;
        continue;
      }
      tree.push_back(p);
      for (pid_t child : children_of(p)) unvisited.push_back(child);
    }
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (pid_t p : tree) {
    if (auto m = memory_of(p)) {
      total.pss_kib += m->pss_kib;
      total.rss_kib += m->rss_kib;
      ++total.processes;
    } else {
      total.unreadable += (total.unreadable.empty() ? "" : ", ") + comm_of(p) + " (" +
                          std::to_string(p) + "): " + std::strerror(errno);
    }
  }
  finish(root);
  return total;
}

void print_row(const char* name, const Stats& s, int n) {
  std::printf("  %-48s median %6.2f ms   p10 %6.2f   p90 %6.2f   (%d runs)\n", name, s.median,
              s.p10, s.p90, n);
}

// Each side's stamps in order, each with what happened since the stamp
// before it. A step is timed from the stamp before it on the same side: the
// launcher's first from the start of spawn, the child's first from its
// release, and the init's report from the command's execve.
struct Row {
  jail::StepMark mark;
  const char* what;
};
using jail::Milestone;
using jail::SetupStep;
using jail::Side;
using jail::Stage;
const std::vector<Row> kLauncherSide = {
    {Milestone::planned, "validate, plan the child, channels, fds"},
    {{Side::launcher, SetupStep::clone3}, "clone3 with the namespaces"},
    {{Side::launcher, SetupStep::netns, Stage::begun}, "open the userns, clone the netns helper"},
    {{Side::launcher, SetupStep::uid_map}, "write uid/gid maps"},
    {{Side::launcher, SetupStep::sync}, "release the child (the go byte)"},
    {{Side::launcher, SetupStep::cgroup, Stage::begun}, "make the cgroups (or none)"},
    {{Side::launcher, SetupStep::netns}, "wait for the netns helper"},
    {{Side::launcher, SetupStep::cgroup}, "hand the cgroups to the child"},
    {Milestone::spawn_returned, "move to the other CPU, sweep; spawn returns"},
};

// The command's steps once it is confined, the same in a fresh jail and in
// one built ahead (where its confinement came before the command did).
const std::vector<Row> kCommandSteps = {
    {{Side::command, SetupStep::chdir}, "chdir"},
    {{Side::command, SetupStep::exec}, "execve"},
};

std::vector<Row> concat(std::initializer_list<std::vector<Row>> parts) {
  std::vector<Row> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::vector<Row> kChildSide = concat({
    {
        {{Side::child, SetupStep::sync}, "wake up once released"},
        {{Side::child, SetupStep::fds}, "arrange fds"},
        {{Side::child, SetupStep::identity}, "ids, dumpable, signals, setsid"},
        {{Side::child, SetupStep::mount}, "build the root, pivot_root"},
        {{Side::child, SetupStep::netns}, "join the netns"},
        {{Side::child, SetupStep::hostname}, "hostname"},
        {{Side::child, SetupStep::cgroup}, "receive the cgroups"},
        {{Side::command, SetupStep::identity}, "vfork, signals, ids"},
        {{Side::command, SetupStep::cgroup}, "join the cgroups"},
        {{Side::command, SetupStep::caps}, "drop caps"},
        {{Side::command, SetupStep::no_new_privs}, "no_new_privs"},
        {{Side::command, SetupStep::landlock}, "Landlock"},
        {{Side::command, SetupStep::rlimit}, "rlimits"},
        {{Side::command, SetupStep::seccomp, Stage::begun}, "release the init's code pages"},
        {{Side::command, SetupStep::seccomp}, "seccomp"},
    },
    kCommandSteps,
    {{Milestone::status_received, "/bin/true runs and exits; init reports"}},
});

// A jail built ahead, from start_command (time 0) to the init's report.
const std::vector<Row> kPooledSide = concat({
    {
        {{Side::command, SetupStep::command}, "the command wakes, receives what to run"},
    },
    kCommandSteps,
    {
        {{Side::command, SetupStep::wait}, "/bin/true runs and exits; the init reaps it"},
        {{Side::child, SetupStep::wait}, "the init kills and reaps the rest"},
        {{Side::child, SetupStep::init}, "git write-back, cgroups removed"},
        {Milestone::status_received, "status written; the launcher wakes, reads it"},
    },
});

using PerMark = std::vector<std::vector<double>>;  // samples in ms, by StepMark::slot()

void record_side(const jail::StepTimes& t, const std::vector<Row>& rows,
                 std::optional<std::chrono::nanoseconds> previous, PerMark& at_ms,
                 PerMark& step_ms) {
  auto ms = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; };
  for (const Row& r : rows) {
    const auto at = t.at(r.mark);
    if (!at) continue;  // not in this tier
    const auto i = r.mark.slot();
    at_ms[i].push_back(ms(*at));
    if (previous) step_ms[i].push_back(ms(*at - *previous));
    previous = at;
  }
}

void record_steps(const jail::StepTimes& t, PerMark& at_ms, PerMark& step_ms) {
  record_side(t, kLauncherSide, std::chrono::nanoseconds(0), at_ms, step_ms);
  record_side(t, kChildSide, t.at({Side::launcher, SetupStep::sync}), at_ms, step_ms);
}

// One line per step with samples (a step another tier skips has none).
void print_rows(const std::vector<Row>& rows, const PerMark& at_ms, const PerMark& step_ms) {
  for (const Row& r : rows) {
    const auto i = r.mark.slot();
    if (step_ms[i].empty()) continue;
    std::printf("    %-26s %-44s at %6.3f ms   step %6.3f ms\n", r.mark.name().c_str(), r.what,
                stats(at_ms[i]).median, stats(step_ms[i]).median);
  }
}

void print_steps(const PerMark& at_ms, const PerMark& step_ms) {
  std::printf("  launcher (jail::spawn):\n");
  print_rows(kLauncherSide, at_ms, step_ms);
  std::printf("  jail's child, then the command until execve:\n");
  print_rows(kChildSide, at_ms, step_ms);
}

// A byte to another process and back over two pipes: twice the wake-up
// cost of one process by another, in ms.
double wake_round_trip() {
  int there[2], back[2];
  if (::pipe2(there, O_CLOEXEC) != 0 || ::pipe2(back, O_CLOEXEC) != 0) die("pipe");
  const pid_t pid = ::fork();
  if (pid < 0) die("fork");
  char b = 0;
  if (pid == 0) {
    ::close(there[1]);  // else its read never sees end of file
    ::close(back[0]);
    while (::read(there[0], &b, 1) == 1)
      if (::write(back[1], &b, 1) != 1) break;
    ::_exit(0);
  }
  ::close(there[0]);
  ::close(back[1]);
  std::vector<double> rounds;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = Clock::now();
    if (::write(there[1], &b, 1) != 1 || ::read(back[0], &b, 1) != 1) die("wake-up round trip");
    rounds.push_back(ms_since(t0));
  }
  ::close(there[1]);
  ::close(back[0]);
  finish(pid);
  return stats(rounds).median;
}

// The part of an exec call the exec tool's pool of jails built ahead leaves
// on the critical path: jail::start_command on a jail from spawn_awaiting
// (built 10 ms earlier, as the spawner builds it while idle) until the init
// reports the command's status, stamped inside by the init and the command;
// with the floor in the same run: a posix_spawn + waitpid of /bin/true from
// this process, and a wake-up round trip between two processes.
void bench_pooled(const Options& o) {
  const Planned p = plan_default(o.workspace, {"/bin/true"});
  const Command bare{{"/bin/true"}, o.workspace, {}};
  jail::ExecRequest request = p.request;
  request.stdin_fd = request.stdout_fd = request.stderr_fd = -1;
  std::vector<double> pooled, floor, wake, check;
  PerMark at_ms(jail::kStepMarks), step_ms(jail::kStepMarks);
  for (int i = 0; i < o.runs + o.warmup; ++i) {
    auto jailed = jail::spawn_awaiting(
        p.spec, jail::SpawnOptions{.time_steps = true, .wait_readable = {}, .verified = {}});
    if (!jailed) die("spawn_awaiting: " + jailed.error().to_string());
    ::usleep(10'000);
    const auto t0 = Clock::now();
    // The spawner's check before it uses a pooled jail (jail_pool.cc).
    if (!jail::built_from_current_host(*jailed, p.spec)) die("the host changed under the bench");
    const double check_ms = ms_since(t0);
    if (auto started = jail::start_command(*jailed, request, std::nullopt); !started)
      die("start_command: " + started.error().to_string());
    auto outcome = jail::wait_until_status(*jailed);
    const double ms = ms_since(t0);
    if (!outcome || outcome->exit_status() != 0)
      die("jail: " + (outcome ? outcome->to_string() : outcome.error().to_string()));
    const double bare_ms = time_one(bare);
    if (i < o.warmup) continue;
    pooled.push_back(ms);
    floor.push_back(bare_ms);
    check.push_back(check_ms);
    if (outcome->steps)
      record_side(*outcome->steps, kPooledSide, std::chrono::nanoseconds(0), at_ms, step_ms);
    if (i % 20 == 0) wake.push_back(wake_round_trip());
  }
  const Stats sp = stats(pooled), sf = stats(floor);
  const double wake_ms = stats(wake).median;
  std::printf("\na jail built ahead (the exec tool's pool): start_command to the init's status\n");
  print_row("brig: command into a waiting jail, /bin/true", sp, o.runs);
  print_row("  of which the host check (built_from_current_host)", stats(check), o.runs);
  print_row("floor: posix_spawn + waitpid of /bin/true", sf, o.runs);
  std::printf("  %-48s median %6.3f ms\n", "floor: wake-up round trip between two processes",
              wake_ms);
  std::printf("  brig above the floor (spawn + one round trip): %.3f ms (%.2fx the floor)\n",
              sp.median - sf.median - wake_ms, sp.median / (sf.median + wake_ms));
  std::printf("  by step (\"at\" from start_command):\n");
  print_rows(kPooledSide, at_ms, step_ms);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--brig")
      o.brig = value();
    else if (a == "--bwrap")
      o.bwrap = value();
    else if (a == "--workspace")
      o.workspace = value();
    else if (a == "--only") {
      if (value() != "pooled") die("--only takes pooled");
      o.pooled_only = true;
    } else if (a == "--runs")
      o.runs = std::max(10, std::atoi(value().c_str()));
    else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: brig-jail-bench --brig PATH [--bwrap PATH] [--workspace DIR] [--runs N]\n"
          "         [--only pooled]\n");
      std::exit(0);
    } else {
      die("unknown option " + a + " (see --help)");
    }
  }
  if (o.brig.empty() && !o.pooled_only) die("--brig PATH is required");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::string made;
  if (o.workspace.empty()) {
    char tmpl[] = "/tmp/brig-jail-bench.XXXXXX";
    if (!::mkdtemp(tmpl)) die("mkdtemp");
    o.workspace = made = tmpl;
  }
  o.workspace = std::filesystem::canonical(o.workspace).string();

  if (o.pooled_only) {
    bench_pooled(o);
    if (!made.empty()) std::filesystem::remove_all(made);
    return 0;
  }
  const Planned planned = plan_default(o.workspace, {"/bin/true"});
  const std::vector<int> bpf = seccomp_fds();
  const Command brig{{o.brig, "run", "--", "/bin/true"}, o.workspace, {}};
  const Command bwrap{bwrap_args(o.bwrap, planned, {"/bin/true"}), o.workspace, bpf};
  const Command bare{{"/bin/true"}, o.workspace, {}};

  std::printf("brig-jail-bench: uid %d, workspace %s, kernel ", static_cast<int>(::getuid()),
              o.workspace.c_str());
  std::fflush(stdout);
  time_one(Command{{"/usr/bin/uname", "-r"}, "", {}, false});

  // The isolation both give, seen from inside: same namespaces, no
  // capabilities, no_new_privs, brig's two seccomp filters.
  const std::vector<std::string> show = {"/bin/grep", "-hE", "^(CapEff|NoNewPrivs|Seccomp_filters)",
                                         "/proc/self/status"};
  std::printf("\ninside brig's jail:\n");
  std::fflush(stdout);
  Command brig_show{{o.brig, "run", "--"}, o.workspace, {}, false};
  brig_show.argv.insert(brig_show.argv.end(), show.begin(), show.end());
  time_one(brig_show);
  std::printf("inside bwrap's jail:\n");
  std::fflush(stdout);
  time_one(Command{bwrap_args(o.bwrap, planned, show), o.workspace, bpf, false});

  // A B A B: both see the same machine load, caches and page-cache state.
  for (int i = 0; i < o.warmup; ++i) {
    time_one(brig);
    time_one(bwrap);
  }
  std::vector<double> a, b, c;
  for (int i = 0; i < o.runs; ++i) {
    a.push_back(time_one(brig));
    b.push_back(time_one(bwrap));
    c.push_back(time_one(bare));
  }
  const Stats sa = stats(a), sb = stats(b), sc = stats(c);
  std::printf("\nstart to exit of /bin/true, alternating brig / bwrap / bare:\n");
  print_row("brig run -- /bin/true (default policy)", sa, o.runs);
  print_row("bwrap, same namespaces, mounts and seccomp", sb, o.runs);
  print_row("bare posix_spawn of /bin/true", sc, o.runs);
  std::printf("  ratio brig / bwrap: %.2f (target <= 0.70: %s)\n", sa.median / sb.median,
              sa.median / sb.median <= 0.70 ? "met" : "NOT met");

  // The split. brig's start-up is timed from outside (a `brig run` that
  // stops after parsing its command line), policy loading and planning
  // around the library call `brig run` makes; the jail's steps are stamped
  // from inside (SpawnOptions::time_steps) by the launcher, the jail's child
  // and the command until its execve.
  std::vector<double> startup, plan_ms;
  PerMark at_ms(jail::kStepMarks), step_ms(jail::kStepMarks);
  std::string layers;
  for (int i = 0; i < o.runs; ++i) {
    startup.push_back(time_one(Command{{o.brig, "run"}, o.workspace, {}}, 2));
    auto t0 = Clock::now();
    Planned p = plan_default(o.workspace, {"/bin/true"});
    plan_ms.push_back(ms_since(t0));
    p.request.stdout_fd = p.request.stderr_fd = -1;
    auto jailed =
        jail::spawn(p.spec, p.request,
                    jail::SpawnOptions{.time_steps = true, .wait_readable = {}, .verified = {}});
    if (!jailed) die("spawn: " + jailed.error().to_string());
    auto outcome = jail::wait_until_status(*jailed);
    if (!outcome || outcome->exit_status() != 0)
      die("jail: " + (outcome ? outcome->to_string() : outcome.error().to_string()));
    if (!outcome->steps) die("the jail's steps were not stamped");
    record_steps(*outcome->steps, at_ms, step_ms);
    layers = outcome->layers.to_string();
    std::replace(layers.begin(), layers.end(), '\n', ';');
  }
  std::printf(
      "\nbrig's setup by step (medians; start-up is a `brig run` that exits after parsing its\n"
      "arguments; the rest is stamped inside jail::spawn + wait_until_status as `brig run`\n"
      "calls them. The launcher and the jail's child run at the same time on two CPUs: \"at\"\n"
      "is from the start of spawn, \"step\" from the previous stamp on the same side):\n");
  print_row("process start + command line", stats(startup), o.runs);
  print_row("load default policy + plan the JailSpec", stats(plan_ms), o.runs);
  print_steps(at_ms, step_ms);
  std::printf("\nwhat brig enforced in these jails: %s\n", layers.c_str());
  std::printf(
      "what differs: bwrap has no Landlock and no resource limits (brig: rlimits, and cgroups\n"
      "  where it can make them); as root brig also makes /proc/sys & co. read-only and masks\n"
      "  /proc/kcore & co., which the bwrap command does not. Namespaces, mounts and seccomp\n"
      "  are equal: the same mount plan, and brig's own two BPF programs (--add-seccomp-fd).\n");

  const Command brig_sleep{{o.brig, "run", "--", "sleep", "2"}, o.workspace, {}};
  const Command bwrap_sleep{bwrap_args(o.bwrap, planned, {"sleep", "2"}), o.workspace, bpf};
  const TreeMemory mb = memory_while_running(brig_sleep);
  const TreeMemory mw = memory_while_running(bwrap_sleep);
  std::printf("\nmemory of the runner's own processes while `sleep 2` runs (sleep excluded):\n");
  std::printf("  brig:  PSS %ld KiB (%.2f MiB; target <= 1 MiB: %s), RSS %ld KiB, %d process(es)\n",
              mb.pss_kib, mb.pss_kib / 1024.0, mb.pss_kib <= 1024 ? "met" : "NOT met", mb.rss_kib,
              mb.processes);
  if (!mb.unreadable.empty()) std::printf("         unreadable: %s\n", mb.unreadable.c_str());
  std::printf("  bwrap: PSS %ld KiB (%.2f MiB), RSS %ld KiB, %d process(es)\n", mw.pss_kib,
              mw.pss_kib / 1024.0, mw.rss_kib, mw.processes);
  if (!mw.unreadable.empty()) std::printf("         unreadable: %s\n", mw.unreadable.c_str());

  if (!made.empty()) ::rmdir(made.c_str());
  return 0;
}
