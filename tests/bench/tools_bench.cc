// brig-tools-bench: brig's tools through `brig serve`, driven by one raw MCP
// client (newline-framed JSON-RPC; JSON is parsed only outside the timed
// part), against named peers in the same run (issue 4, "Benchmarks"):
//   exec    `exec` of /bin/true (client -> server -> spawner -> jail ->
//           result), from the spawner's jail built ahead and (--no-jail-pool)
//           from a jail built for the call, spaced and back to back, against
//           bwrap running /bin/true with equal isolation;
//   search  `search` on the Linux tree against `rg -j1`: counts and matching
//           lines for a literal, a case-insensitive literal and a regex, with
//           brig's counts checked against rg's;
//   files   `read_file` of a 1 MiB text file and `find_files` of **/*.c
//           against the reference MCP filesystem server, and the server-side
//           cost of a 1 MiB read.
// Every reply line is checked against 10 MiB (the official TS client drops
// the connection above that). Not a test: it passes or fails nothing; the
// ratios are printed against the issue's targets. Run
// tests/bench/run_tools_bench.sh, which prepares the kernel tree.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/bench/bench_stats.h"
#include "tests/bench/bwrap_peer.h"
#include "tests/server/wire_client.h"

namespace {

using brig::bench::Clock;
using brig::bench::ms_since;
using brig::bench::Stats;
using brig::bench::stats;
using brig::wire::ServerProcess;
using Json = nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kReplyTimeout = 300s;
constexpr std::size_t kReplyLimit = 10u << 20;  // the TS client's limit

struct Options {
  std::string brig;  // the brig executable (`brig serve`)
  std::string bwrap = "/usr/bin/bwrap";
  std::string rg = "/usr/bin/rg";
  std::string node;        // node, for the reference filesystem server
  std::string filesystem;  // @modelcontextprotocol/server-filesystem's dist/index.js
  std::string workspace;   // brig's workspace and the filesystem server's root
  std::string kernel;      // the kernel tree, relative to the workspace
  std::string text;        // the 1 MiB text file, relative to the workspace
  std::string tiny;        // a one-line text file, relative to the workspace
  int exec_runs = 200;
  int search_runs = 5;
  int read_runs = 200;
  int find_runs = 3;
  int first_page = 100;  // search's default max_results
  std::set<std::string> sections = {"exec", "search", "files"};
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "brig-tools-bench: %s\n", why.c_str());
  std::exit(1);
}

void print_row(const std::string& name, const Stats& s) {
  std::printf("  %-58s median %9.3f ms  p10 %9.3f  p90 %9.3f  (%zu)\n", name.c_str(), s.median,
              s.p10, s.p90, s.n);
}

// The verdict is on the medians; `fast` (the same ratio of the p10s, the
// runs least disturbed by other load on a shared machine) is shown beside it.
void print_ratio(const std::string& what, double value, const char* target, bool met,
                 double fast = -1) {
  std::printf("  => %-62s %7.3f   target %-7s %-6s", what.c_str(), value, target,
              met ? "met" : "MISSED");
  if (fast >= 0) std::printf("  (p10s: %.3f)", fast);
  std::printf("\n");
}

// Replies over kReplyLimit: each is warned about loudly when it arrives.
long oversized_replies = 0;

void check_reply_size(const std::string& server, std::size_t bytes) {
  if (bytes <= kReplyLimit) return;
  ++oversized_replies;
  std::printf(
      "\n!!!!!!!! WARNING: %s sent a reply line of %zu bytes (%.2f MiB), over the 10 MiB "
      "the official TypeScript client accepts !!!!!!!!\n\n",
      server.c_str(), bytes, static_cast<double>(bytes) / (1 << 20));
}

// One MCP server over stdio, legacy handshake done; call() returns the
// response line of one request (notifications in between are dropped).
class Client {
 public:
  Client(std::string name, const std::string& exe, const std::vector<std::string>& args)
      : name_(std::move(name)) {
    auto p = ServerProcess::start(exe, args, /*pipes=*/true, /*quiet=*/true);
    if (!p) die("cannot start " + exe);
    process_.emplace(std::move(*p));
    auto answer =
        request("initialize", R"({"protocolVersion":"2025-11-25","capabilities":{},)"
                              R"("clientInfo":{"name":"brig-tools-bench","version":"1"}})");
    if (is_error(answer)) die(name_ + ": initialize failed: " + answer.substr(0, 400));
    send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
         "\n");
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client() {
    process_->stream().close_write();
    if (!process_->wait_exit(10s)) ::kill(process_->pid(), SIGKILL);
  }

  const std::string& name() const { return name_; }
  pid_t pid() const { return process_->pid(); }
  std::size_t largest_reply() const { return largest_; }

  std::string request(std::string_view method, std::string_view params) {
    const long id = next_id_++;
    std::string line = "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) + ",\"method\":\"";
    line += method;
    line += "\",\"params\":";
    line += params;
    line += "}\n";
    send(line);
    const std::string prefix_a = "\"id\":" + std::to_string(id) + ",";
    const std::string prefix_b = "\"id\":" + std::to_string(id) + "}";
    for (;;) {
      auto reply = process_->stream().read_line(kReplyTimeout);
      if (!reply) die(name_ + ": no reply to " + std::string(method) + " in time");
      largest_ = std::max(largest_, reply->size());
      check_reply_size(name_, reply->size());
      // Responses carry our id near the top level; JSON strings inside a
      // result cannot hold `"id":N,` unescaped. Notifications are skipped.
      if (reply->find("\"method\":\"notifications/") < 64) continue;
      if (reply->find(prefix_a) != std::string::npos || reply->find(prefix_b) != std::string::npos)
        return std::move(*reply);
    }
  }

  std::string call(std::string_view tool, std::string_view arguments) {
    std::string params = "{\"name\":\"";
    params += tool;
    params += "\",\"arguments\":";
    params += arguments;
    params += "}";
    return request("tools/call", params);
  }

  static bool is_error(std::string_view line) {
    return line.find("\"error\":{") != std::string_view::npos ||
           line.find("\"isError\":true") != std::string_view::npos;
  }

 private:
  void send(std::string_view line) {
    if (!process_->stream().write(line)) die(name_ + ": the server stopped reading");
  }

  std::string name_;
  std::optional<ServerProcess> process_;
  long next_id_ = 1;
  std::size_t largest_ = 0;
};

// The result object of a response line; dies on a JSON-RPC or tool error.
Json result_of(const std::string& who, const std::string& line) {
  Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) die(who + ": a reply that is not JSON: " + line.substr(0, 300));
  if (j.contains("error")) die(who + ": error " + j["error"].dump());
  Json& r = j["result"];
  if (r.value("isError", false)) die(who + ": tool error: " + r.dump().substr(0, 1000));
  return std::move(r);
}

// next_offset in a brig reply, found without parsing: structuredContent's
// key is the only place `"next_offset":` occurs unescaped.
std::optional<long> next_offset(std::string_view line) {
  const auto at = line.find("\"next_offset\":");
  if (at == std::string_view::npos) return std::nullopt;
  return std::strtol(line.data() + at + 14, nullptr, 10);
}

// ---------------------------------------------------------------- exec

// CPU time the whole machine has spent since boot, all CPUs, in ms (the
// first line of /proc/stat: user, nice, system, irq and softirq; idle,
// iowait and steal left out). Everything a call costs is in it, also what
// no process of the call is charged for: the kernel threads that tear a
// network namespace down after its jail is gone, and an init that exits
// after brig has reported its command's status.
double machine_busy_ms() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || cpu != "cpu")
    die("cannot read /proc/stat");
  return 1000.0 * static_cast<double>(user + nice + system + irq + softirq) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// A run of back-to-back calls: the time of each, and the machine's CPU
// time per call (machine_busy_ms, so other load on a shared machine is in
// it too: compare the peers of one run, and look at the load printed).
struct Burst {
  Stats wall;
  double cpu_ms = 0;
};

template <class Call>
Burst burst(int runs, Call&& call) {
  std::vector<double> wall;
  const double cpu0 = machine_busy_ms();
  for (int i = 0; i < runs; ++i) wall.push_back(call());
  return {stats(wall), (machine_busy_ms() - cpu0) / runs};
}

// Pins this process, and so everything it starts from now on, to one CPU:
// the first it may use. Returns the mask to restore.
cpu_set_t pin_to_one_cpu(int* cpu) {
  cpu_set_t all;
  CPU_ZERO(&all);
  if (::sched_getaffinity(0, sizeof all, &all) != 0) die("sched_getaffinity failed");
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &all)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) die("sched_setaffinity failed");
    *cpu = c;
    return all;
  }
  die("no CPU to pin to");
}

// Two ways to call: spaced, with a pause before every timed run so that
// nothing of the previous one still runs (the pooled jail has been rebuilt,
// so it waits ready; bwrap does not share the CPUs with that rebuild); and
// back to back, each call sent as soon as the previous result came: the
// spawner's pool grows with such a burst (up to kMaxAhead jails, as memory
// allows: server/spawner/jail_pool.h) and refills while a jail is still
// ready, so a call finds a jail built ahead unless the burst outruns the
// refills (then one is built for it). brig
// without its pool (--no-jail-pool: every jail built for its call) is timed
// both ways too, as the reference for what the pool buys.
//
// Back to back, nothing is idle between calls: each call's CPU (its own
// jail's work, the next jail's build, the last jail's teardown) has to fit
// on the machine's CPUs, so no call can take less than its CPU time divided
// by the CPUs. That floor is printed from the CPU each peer costs the
// machine per call, measured in the same run, with how close brig comes to
// its own. The back-to-back runs are repeated with everything (this client,
// a brig serve and its jails, bwrap) on one CPU, for how the ratio scales
// from one CPU to all.
void bench_exec(const Options& o, Client& brig) {
  std::printf("\n== exec: /bin/true, client -> brig serve -> spawner -> jail -> result\n");
  std::printf("   versus bwrap running /bin/true with the same isolation\n");
  Client fresh("brig serve --no-jail-pool", o.brig,
               {"serve", "--workspace", o.workspace, "--no-jail-pool"});
  const std::string args = R"({"argv":["/bin/true"]})";
  for (Client* c : {&brig, &fresh}) {
    Json r = result_of("brig exec", c->call("exec", args));
    const Json& s = r["structuredContent"];
    if (s.value("status", "") != "exited" || s.value("exit_code", -1) != 0)
      die("brig exec of /bin/true: " + s.dump());
  }
  const auto planned = brig::bench::plan_default(o.workspace, {"/bin/true"});
  const std::vector<int> bpf = brig::bench::seccomp_fds();
  const brig::bench::Command bwrap{brig::bench::bwrap_args(o.bwrap, planned, {"/bin/true"}),
                                   o.workspace, bpf};
  auto run_bwrap = [&] {
    const auto t0 = Clock::now();
    const int status = brig::bench::finish(brig::bench::start(bwrap));
    const double ms = ms_since(t0);
    if (status != 0) die("bwrap exited " + std::to_string(status) + "; run it by hand");
    return ms;
  };
  std::vector<double> duration_ms;  // the job's own duration as brig reports it
  auto run_brig = [&](Client& c) {
    const auto t0 = Clock::now();
    std::string line = c.call("exec", args);
    const double ms = ms_since(t0);
    if (Client::is_error(line)) die("brig exec failed: " + line.substr(0, 500));
    if (auto at = line.find("\"duration_ms\":"); at != std::string::npos)
      duration_ms.push_back(std::strtod(line.c_str() + at + 14, nullptr));
    return ms;
  };
  auto run_ping = [&] {
    const auto t0 = Clock::now();
    brig.request("ping", "{}");
    return ms_since(t0);
  };
  auto pause = [] { ::usleep(20'000); };
  for (int i = 0; i < 10; ++i) run_brig(brig), run_brig(fresh), run_bwrap();
  duration_ms.clear();

  std::vector<double> pooled, built, b, p;
  for (int i = 0; i < o.exec_runs; ++i) {
    pause();
    pooled.push_back(run_brig(brig));
    pause();
    b.push_back(run_bwrap());
    pause();
    built.push_back(run_brig(fresh));
    p.push_back(run_ping());
  }
  const Stats sd = stats(duration_ms);
  const std::string load = brig::bench::load_average();
  const Burst pooled_b2b = burst(o.exec_runs, [&] { return run_brig(brig); });
  const Burst built_b2b = burst(o.exec_runs, [&] { return run_brig(fresh); });
  const Burst bwrap_b2b = burst(o.exec_runs, run_bwrap);

  int cpu = -1;
  const cpu_set_t all = pin_to_one_cpu(&cpu);
  Burst pooled_one, bwrap_one;
  {
    Client pinned("brig serve on one CPU", o.brig, {"serve", "--workspace", o.workspace});
    for (int i = 0; i < 10; ++i) run_brig(pinned), run_bwrap();
    pooled_one = burst(o.exec_runs, [&] { return run_brig(pinned); });
    bwrap_one = burst(o.exec_runs, run_bwrap);
  }
  if (::sched_setaffinity(0, sizeof all, &all) != 0) die("sched_setaffinity failed");

  const Stats sa = stats(pooled), sf = stats(built), sb = stats(b), sp = stats(p);
  const Stats sa2 = pooled_b2b.wall, sf2 = built_b2b.wall;
  std::printf("  spaced (20 ms pause before each run), alternating:\n");
  print_row("brig: MCP exec, jail built ahead (pool), request to result", sa);
  print_row("brig --no-jail-pool: MCP exec, jail built for the call", sf);
  print_row("bwrap /bin/true, start to exit (same isolation)", sb);
  print_row("brig: MCP ping round trip (protocol floor)", sp);
  std::printf("  brig's own duration_ms of the pooled job (whole ms): median %.0f\n", sd.median);
  std::printf(
      "  back to back (each call as soon as the last result came; the pool grows with the "
      "burst), load %s before:\n",
      load.c_str());
  print_row("brig: MCP exec, back to back (pool sized by demand)", sa2);
  print_row("brig --no-jail-pool: MCP exec", sf2);
  print_row("bwrap /bin/true, back to back", bwrap_b2b.wall);
  print_ratio("exec through MCP / bwrap alone, spaced (medians)", sa.median / sb.median, "<= 0.5",
              sa.median / sb.median <= 0.5, sa.p10 / sb.p10);
  print_ratio("exec through MCP / bwrap alone, back to back", sa2.median / sb.median, "<= 0.4",
              sa2.median / sb.median <= 0.4, sa2.p10 / sb.p10);
  print_ratio("the same without the pool, spaced", sf.median / sb.median, "<= 0.5",
              sf.median / sb.median <= 0.5, sf.p10 / sb.p10);
  print_ratio("the same without the pool, back to back", sf2.median / sb.median, "<= 0.5",
              sf2.median / sb.median <= 0.5, sf2.p10 / sb.p10);
  std::printf("  => %-62s %7.3f   (like for like; no target)\n",
              "exec back to back / bwrap back to back", sa2.median / bwrap_b2b.wall.median);

  const long cpus = CPU_COUNT(&all);
  const double floor = pooled_b2b.cpu_ms / static_cast<double>(cpus);
  std::printf(
      "  CPU per call back to back, the whole machine's (/proc/stat): brig %.2f ms (without the "
      "pool %.2f), bwrap %.2f ms\n",
      pooled_b2b.cpu_ms, built_b2b.cpu_ms, bwrap_b2b.cpu_ms);
  std::printf(
      "  the floor back to back on %ld CPUs (no call takes less than its CPU / %ld): brig %.3f "
      "ms, %.3f of bwrap alone;\n    brig back to back takes %.2fx its floor (1.00: every CPU "
      "busy all the time)\n",
      cpus, cpus, floor, floor / sb.median, sa2.median / floor);
  std::printf(
      "  one CPU (this client, a brig serve and bwrap all on CPU %d), back to back: brig %.3f "
      "ms, bwrap %.3f ms, ratio %.3f; CPU per call brig %.2f, bwrap %.2f\n",
      cpu, pooled_one.wall.median, bwrap_one.wall.median,
      pooled_one.wall.median / bwrap_one.wall.median, pooled_one.cpu_ms, bwrap_one.cpu_ms);
  std::printf(
      "  from 1 to %ld CPUs, back to back: brig %.3f -> %.3f ms (x%.2f), bwrap %.3f -> %.3f ms "
      "(x%.2f)\n",
      cpus, pooled_one.wall.median, sa2.median, sa2.median / pooled_one.wall.median,
      bwrap_one.wall.median, bwrap_b2b.wall.median, bwrap_b2b.wall.median / bwrap_one.wall.median);
}

// ---------------------------------------------------------------- search

struct Pattern {
  std::string name;
  std::string pattern;
  bool fixed = false;
  bool icase = false;
  double target = 0;
};

// A child with its stdout on a pipe we read.
struct Piped {
  pid_t pid = -1;
  int fd = -1;
};

Piped start_piped(const std::vector<std::string>& argv, const std::string& cwd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) die("pipe");
  const pid_t pid = ::fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    ::dup2(fds[1], 1);
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    std::vector<char*> v;
    for (const auto& s : argv) v.push_back(const_cast<char*>(s.c_str()));
    v.push_back(nullptr);
    ::execv(v[0], v.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// Runs argv in cwd and returns its whole stdout; the time covers start to
// exit, as a client reading rg's output through a pipe sees it.
std::string run_capture(const std::vector<std::string>& argv, const std::string& cwd, double* ms) {
  const auto t0 = Clock::now();
  Piped p = start_piped(argv, cwd);
  std::string out;
  char buf[1 << 16];
  for (ssize_t n; (n = ::read(p.fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      die("reading rg's output");
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(p.fd);
  const int status = brig::bench::finish(p.pid);
  *ms = ms_since(t0);
  if (status > 1) die(argv[0] + " exited " + std::to_string(status));  // 1: no match
  return out;
}

// The time until rg has written `lines` lines (`rg | head -n lines`); rg is
// then stopped (closing the pipe ends it with SIGPIPE, as head would).
double rg_head(const std::vector<std::string>& argv, const std::string& cwd, int lines) {
  const auto t0 = Clock::now();
  Piped p = start_piped(argv, cwd);
  int seen = 0;
  char buf[1 << 16];
  for (ssize_t n; seen < lines && (n = ::read(p.fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      die("reading rg's output");
    }
    seen += static_cast<int>(std::count(buf, buf + n, '\n'));
  }
  const double ms = ms_since(t0);
  ::close(p.fd);
  brig::bench::finish(p.pid);
  return ms;
}

std::vector<std::string> rg_argv(const Options& o, const Pattern& p,
                                 std::initializer_list<const char*> mode) {
  std::vector<std::string> a = {o.rg, "--no-config", "-j1"};
  if (p.fixed) a.push_back("-F");
  if (p.icase) a.push_back("-i");
  a.insert(a.end(), mode.begin(), mode.end());
  a.insert(a.end(), {"-e", p.pattern});
  return a;
}

std::string search_args(const Options& o, const Pattern& p, const std::string& mode,
                        long max_results, long offset, bool long_lines) {
  Json a = {{"pattern", p.pattern}, {"path", o.kernel}, {"output_mode", mode}};
  if (p.fixed) a["fixed_strings"] = true;
  if (p.icase) a["case_insensitive"] = true;
  if (max_results > 0) a["max_results"] = max_results;
  if (offset > 0) a["offset"] = offset;
  if (long_lines) a["max_line_length"] = 100000;
  return a.dump();
}

// Every page of one search (max_results 10000 each, the most a page may
// hold), timed from the first request to the last reply.
std::vector<std::string> brig_all_pages(const Options& o, Client& brig, const Pattern& p,
                                        const std::string& mode, double* ms) {
  std::vector<std::string> pages;
  const auto t0 = Clock::now();
  long offset = 0;
  for (;;) {
    pages.push_back(brig.call("search", search_args(o, p, mode, 10000, offset, true)));
    if (Client::is_error(pages.back())) die("brig search failed: " + pages.back().substr(0, 500));
    auto next = next_offset(pages.back());
    if (!next) break;
    offset = *next;
  }
  *ms = ms_since(t0);
  return pages;
}

using Counts = std::map<std::string, long>;  // matching lines per file

Counts brig_counts(const std::vector<std::string>& pages, bool* partial) {
  Counts c;
  for (const auto& line : pages) {
    Json r = result_of("brig search", line);
    const Json& s = r["structuredContent"];
    if (s.value("timed_out", false) || s.value("stopped_by", "") == "deadline") *partial = true;
    for (const Json& f : s["files"]) c[f["path"].get<std::string>()] += f.value("count", 0L);
  }
  return c;
}

Counts brig_content_counts(const std::vector<std::string>& pages, bool* partial) {
  Counts c;
  for (const auto& line : pages) {
    Json r = result_of("brig search", line);
    const Json& s = r["structuredContent"];
    if (s.value("timed_out", false) || s.value("stopped_by", "") == "deadline") *partial = true;
    for (const Json& f : s["files"]) {
      long n = 0;
      for (const Json& l : f["lines"]) n += l.value("match", false) ? 1 : 0;
      c[f["path"].get<std::string>()] += n;
    }
  }
  return c;
}

// rg -c output: "path:count" lines.
Counts rg_counts(const std::string& out) {
  Counts c;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.rfind(':');
    if (colon == std::string::npos) continue;
    c[line.substr(0, colon)] += std::atol(line.c_str() + colon + 1);
  }
  return c;
}

long total(const Counts& c) {
  long n = 0;
  for (const auto& [path, count] : c) n += count;
  return n;
}

// Prints both totals and, when they differ, the files that differ.
void compare_counts(const std::string& what, const Counts& brig, const Counts& rg) {
  const long tb = total(brig), tr = total(rg);
  std::printf("  %-58s brig %ld lines in %zu files, rg %ld lines in %zu files: %s\n", what.c_str(),
              tb, brig.size(), tr, rg.size(),
              tb == tr && brig == rg ? "equal" : "MISMATCH (a bug)");
  if (brig == rg) return;
  int shown = 0;
  std::set<std::string> paths;
  for (const auto& [k, v] : brig) paths.insert(k);
  for (const auto& [k, v] : rg) paths.insert(k);
  for (const auto& path : paths) {
    const long b = brig.contains(path) ? brig.at(path) : 0;
    const long r = rg.contains(path) ? rg.at(path) : 0;
    if (b == r) continue;
    if (shown++ < 15) std::printf("      %s: brig %ld, rg %ld\n", path.c_str(), b, r);
  }
  if (shown > 15) std::printf("      … %d files differ in all\n", shown);
}

void bench_search(const Options& o, Client& brig) {
  const std::string tree = o.workspace + "/" + o.kernel;
  std::printf("\n== search on %s: brig through MCP versus `rg -j1` (one thread each)\n",
              tree.c_str());
  std::printf(
      "   counts: brig output_mode \"count\", every page, vs `rg -c`. Matching lines: brig\n"
      "   \"content\", every page (max_results 10000, max_line_length 100000, so lines are\n"
      "   whole as rg prints them) vs `rg -n` read to its end through a pipe. First page:\n"
      "   brig's default page (max_results %d) vs `rg -n | head -n %d` (time to rg's %dth\n"
      "   line). Each of brig's pages is a fresh walk that skips `offset` results.\n"
      "   Alternating brig / rg, %d runs each, medians.\n",
      o.first_page, o.first_page, o.first_page, o.search_runs);
  const std::vector<Pattern> patterns = {
      {"literal PM_RESUME", "PM_RESUME", true, false, 1.2},
      {"case-insensitive literal pm_resume", "pm_resume", true, true, 1.3},
      {"regex \\w+_SUSPEND\\b", "\\w+_SUSPEND\\b", false, false, 1.3},
  };
  for (const Pattern& p : patterns) {
    std::printf("\n  -- %s  (target <= %.1fx rg)\n", p.name.c_str(), p.target);
    const auto rg_c = rg_argv(o, p, {"-c"});
    const auto rg_n = rg_argv(o, p, {"-n", "--no-heading", "--with-filename"});
    std::vector<double> bc, rc, bl, rl, bf, rf;
    std::vector<std::string> count_pages, content_pages;
    std::string rg_count_out, rg_lines_out;
    for (int i = 0; i < o.search_runs; ++i) {
      double ms = 0;
      count_pages = brig_all_pages(o, brig, p, "count", &ms);
      bc.push_back(ms);
      rg_count_out = run_capture(rg_c, tree, &ms);
      rc.push_back(ms);
      content_pages = brig_all_pages(o, brig, p, "content", &ms);
      bl.push_back(ms);
      rg_lines_out = run_capture(rg_n, tree, &ms);
      rl.push_back(ms);
      auto t0 = Clock::now();
      std::string first = brig.call("search", search_args(o, p, "content", 0, 0, false));
      bf.push_back(ms_since(t0));
      if (Client::is_error(first)) die("brig search failed: " + first.substr(0, 500));
      rf.push_back(rg_head(rg_n, tree, o.first_page));
    }
    std::size_t content_bytes = 0;
    for (const auto& page : content_pages) content_bytes += page.size();
    const Stats sbc = stats(bc), src = stats(rc), sbl = stats(bl), srl = stats(rl), sbf = stats(bf),
                srf = stats(rf);
    print_row("brig count (" + std::to_string(count_pages.size()) + " page(s))", sbc);
    print_row("rg -c", src);
    print_row("brig matching lines (" + std::to_string(content_pages.size()) + " page(s), " +
                  std::to_string(content_bytes) + " reply bytes)",
              sbl);
    print_row("rg -n (" + std::to_string(rg_lines_out.size()) + " bytes of output)", srl);
    print_row("brig first page of matching lines", sbf);
    print_row("rg -n | head -n " + std::to_string(o.first_page), srf);
    bool partial = false;
    const Counts brig_c = brig_counts(count_pages, &partial);
    const Counts brig_l = brig_content_counts(content_pages, &partial);
    if (partial) std::printf("  WARNING: a brig page hit its time limit: results are partial\n");
    const Counts rg_cnt = rg_counts(rg_count_out);
    compare_counts("counts:", brig_c, rg_cnt);
    compare_counts("matching lines:", brig_l, rg_cnt);
    const long rg_lines =
        static_cast<long>(std::count(rg_lines_out.begin(), rg_lines_out.end(), '\n'));
    if (rg_lines != total(rg_cnt))
      std::printf("  (rg -n printed %ld lines, rg -c counted %ld)\n", rg_lines, total(rg_cnt));
    char target[16];
    std::snprintf(target, sizeof target, "<= %.1f", p.target);
    print_ratio("count: brig / rg", sbc.median / src.median, target,
                sbc.median / src.median <= p.target, sbc.p10 / src.p10);
    print_ratio("matching lines, every page: brig / rg", sbl.median / srl.median, target,
                sbl.median / srl.median <= p.target, sbl.p10 / srl.p10);
    std::printf("  => %-62s %7.3f   (no target: rg stops early too)\n",
                "first page: brig / rg | head", sbf.median / srf.median);
  }
}

// ---------------------------------------------------------------- files

// CPU time (ns) each process under root (root included) has run, by name:
// the sum of its threads' /proc/PID/task/TID/schedstat run times, which
// count nanoseconds (/proc/PID/stat's utime and stime count 10 ms ticks).
std::map<std::string, long long> tree_cpu_ns(pid_t root) {
  std::map<pid_t, std::pair<pid_t, std::string>> procs;  // pid -> ppid, name
  DIR* d = ::opendir("/proc");
  if (!d) die("opendir /proc");
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    procs[pid] = {ppid, stat.substr(open + 1, close - open - 1)};
  }
  ::closedir(d);
  std::map<std::string, long long> out;
  std::vector<pid_t> unvisited = {root};
  while (!unvisited.empty()) {
    const pid_t p = unvisited.back();
    unvisited.pop_back();
    if (auto it = procs.find(p); it != procs.end()) {
      const std::string tasks = "/proc/" + std::to_string(p) + "/task";
      for (const auto& t : std::filesystem::directory_iterator(tasks)) {
        std::ifstream in(t.path() / "schedstat");
        long long ns = 0;
        if (in >> ns) out[it->second.second] += ns;
      }
    }
    for (const auto& [pid, proc] : procs)
      if (proc.first == p) unvisited.push_back(pid);
  }
  return out;
}

std::string cpu_per_call(const std::map<std::string, long long>& before,
                         const std::map<std::string, long long>& after, int calls) {
  std::string s;
  double sum = 0;
  for (const auto& [comm, ns] : after) {
    const long long delta = ns - (before.contains(comm) ? before.at(comm) : 0);
    if (delta <= 0) continue;
    const double ms = static_cast<double>(delta) / 1e6 / calls;
    sum += ms;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.3f", s.empty() ? "" : ", ", comm.c_str(), ms);
    s += buf;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f ms (", sum);
  return buf + s + ")";
}

std::size_t text_size(const std::string& who, const std::string& line) {
  Json r = result_of(who, line);
  return r["content"][0].value("text", std::string()).size();
}

void bench_files(const Options& o, Client& brig, Client& fs) {
  const std::string text_abs = o.workspace + "/" + o.text;
  const std::string tree = o.workspace + "/" + o.kernel;
  struct stat st {};
  if (::stat(text_abs.c_str(), &st) != 0) die("no file " + text_abs);
  std::printf("\n== read_file of %s (%lld bytes): brig read_file vs the reference server's\n",
              text_abs.c_str(), static_cast<long long>(st.st_size));
  std::printf("   read_text_file, same raw client, alternating, %d runs each, medians\n",
              o.read_runs);
  Json brig_read = {{"path", o.text}, {"limit", 10000000}};
  Json brig_tiny = {{"path", o.tiny}};
  Json fs_read = {{"path", text_abs}};
  const std::string br = brig_read.dump(), bt = brig_tiny.dump(), fr = fs_read.dump();
  // Whole file from both (the text block: brig adds no line numbers).
  const std::size_t brig_text = text_size("brig read_file", brig.call("read_file", br));
  const std::size_t fs_text = text_size("filesystem read_text_file", fs.call("read_text_file", fr));
  std::printf("  text returned: brig %zu bytes, reference %zu bytes (file %lld)\n", brig_text,
              fs_text, static_cast<long long>(st.st_size));
  auto timed = [](Client& c, std::string_view tool, const std::string& args) {
    const auto t0 = Clock::now();
    std::string line = c.call(tool, args);
    const double ms = ms_since(t0);
    if (Client::is_error(line))
      die(c.name() + " " + std::string(tool) + ": " + line.substr(0, 400));
    return ms;
  };
  auto ping = [](Client& c) {
    const auto t0 = Clock::now();
    c.request("ping", "{}");
    return ms_since(t0);
  };
  for (int i = 0; i < 10; ++i) timed(brig, "read_file", br), timed(fs, "read_text_file", fr);
  std::vector<double> b, f, tiny, pb, pf;
  for (int i = 0; i < o.read_runs; ++i) {
    b.push_back(timed(brig, "read_file", br));
    f.push_back(timed(fs, "read_text_file", fr));
    tiny.push_back(timed(brig, "read_file", bt));
    pb.push_back(ping(brig));
    pf.push_back(ping(fs));
  }
  const Stats sb = stats(b), sf = stats(f), st_ = stats(tiny), spb = stats(pb), spf = stats(pf);
  print_row("brig read_file, 1 MiB", sb);
  print_row("reference read_text_file, 1 MiB", sf);
  print_row("brig read_file, one-line file", st_);
  print_row("brig ping", spb);
  print_row("reference ping", spf);
  print_ratio("read_file 1 MiB: reference / brig (times faster)", sf.median / sb.median, ">= 5",
              sf.median / sb.median >= 5, sf.p10 / sb.p10);

  // Server-side cost. Wall: the 1 MiB read minus a ping (the same pipes and
  // session with no tool work) is what brig adds from request to reply; the
  // read minus a one-line read is what the megabyte itself costs (worker
  // read, worker -> server transfer, JSON escape, write; the client's pipe
  // read is in both). CPU: the run time of brig's processes per read,
  // from /proc, over back-to-back reads (nothing else runs in them then).
  std::printf(
      "\n  server-side cost of a 1 MiB read. Wall: 1 MiB read - ping (all of brig's work,\n"
      "  request to reply) and 1 MiB read - one-line read (the megabyte's own cost). CPU:\n"
      "  run time of every thread of the server's process tree per call (schedstat), %d\n"
      "  calls back to back:\n",
      std::max(o.read_runs, 200));
  const double cost = sb.median - spb.median;
  std::printf("  1 MiB read - ping:          %.3f ms\n", cost);
  std::printf("  1 MiB read - one-line read: %.3f ms\n", sb.median - st_.median);
  const int cpu_runs = std::max(o.read_runs, 200);
  auto cpu = [&](Client& c, std::string_view tool, const std::string& args) {
    const auto before = tree_cpu_ns(c.pid());
    for (int i = 0; i < cpu_runs; ++i) {
      if (tool.empty())
        c.request("ping", "{}");
      else
        c.call(tool, args);
    }
    return cpu_per_call(before, tree_cpu_ns(c.pid()), cpu_runs);
  };
  std::printf("  brig CPU per 1 MiB read:      %s\n", cpu(brig, "read_file", br).c_str());
  std::printf("  brig CPU per one-line read:   %s\n", cpu(brig, "read_file", bt).c_str());
  std::printf("  brig CPU per ping:            %s\n", cpu(brig, "", "").c_str());
  std::printf("  reference CPU per 1 MiB read: %s\n", cpu(fs, "read_text_file", fr).c_str());
  print_ratio("server-side cost of a 1 MiB read (read - ping), ms", cost, "<= 3", cost <= 3);

  std::printf(
      "\n== find_files **/*.c under %s: brig find_files vs the reference search_files\n"
      "   (same semantics: hidden files included, ignore files not applied, as the\n"
      "   reference does). brig pages (limit <= 10000): \"every page\" fetches all paths\n"
      "   as the reference returns them; the first page (default limit) has the total.\n"
      "   Alternating, %d runs each, medians.\n",
      tree.c_str(), o.find_runs);
  auto brig_find = [&](long limit, long offset) {
    Json a = {{"pattern", "**/*.c"}, {"path", o.kernel}, {"hidden", true}, {"gitignore", false}};
    if (limit > 0) a["limit"] = limit;
    if (offset > 0) a["offset"] = offset;
    std::string line = brig.call("find_files", a.dump());
    if (Client::is_error(line)) die("brig find_files: " + line.substr(0, 400));
    return line;
  };
  Json fs_find = {{"path", tree}, {"pattern", "**/*.c"}};
  // The first page as a client gets it by default: hidden files skipped and
  // ignore files applied (issue 16's target), brig alone.
  const Json defaults = {{"pattern", "**/*.c"}, {"path", o.kernel}};
  std::vector<double> ball, bfirst, fsv, bdefault;
  std::vector<std::string> pages;
  std::string fs_reply, first_reply;
  for (int i = 0; i < o.find_runs; ++i) {
    auto t0 = Clock::now();
    pages.clear();
    for (long offset = 0;;) {
      pages.push_back(brig_find(10000, offset));
      auto next = next_offset(pages.back());
      if (!next) break;
      offset = *next;
    }
    ball.push_back(ms_since(t0));
    t0 = Clock::now();
    fs_reply = fs.call("search_files", fs_find.dump());
    fsv.push_back(ms_since(t0));
    if (Client::is_error(fs_reply)) die("reference search_files: " + fs_reply.substr(0, 400));
    t0 = Clock::now();
    first_reply = brig_find(0, 0);
    bfirst.push_back(ms_since(t0));
    t0 = Clock::now();
    const std::string line = brig.call("find_files", defaults.dump());
    bdefault.push_back(ms_since(t0));
    if (Client::is_error(line)) die("brig find_files: " + line.substr(0, 400));
  }
  std::set<std::string> brig_paths, fs_paths;
  long brig_total = 0;
  for (const auto& page : pages) {
    Json s = result_of("brig find_files", page)["structuredContent"];
    brig_total = s.value("total", 0L);
    for (const Json& f : s["files"])
      brig_paths.insert(f.is_string() ? f.get<std::string>() : f.value("path", std::string()));
  }
  {
    Json r = result_of("reference search_files", fs_reply);
    std::istringstream in(r["content"][0].value("text", std::string()));
    for (std::string line; std::getline(in, line);)
      if (line.starts_with(tree + "/")) fs_paths.insert(line.substr(tree.size() + 1));
  }
  const Stats sball = stats(ball), sbfirst = stats(bfirst), sfs = stats(fsv),
              sbdefault = stats(bdefault);
  print_row("brig find_files, every page (" + std::to_string(pages.size()) + ")", sball);
  print_row("brig find_files, first page (has the total)", sbfirst);
  print_row("reference search_files (one reply, " + std::to_string(fs_reply.size()) + " bytes)",
            sfs);
  std::printf("  paths: brig %zu (total %ld), reference %zu: %s\n", brig_paths.size(), brig_total,
              fs_paths.size(), brig_paths == fs_paths ? "equal" : "DIFFERENT");
  if (brig_paths != fs_paths) {
    int shown = 0;
    for (const auto& p : brig_paths)
      if (!fs_paths.contains(p) && shown++ < 10) std::printf("      only brig: %s\n", p.c_str());
    for (const auto& p : fs_paths)
      if (!brig_paths.contains(p) && shown++ < 20)
        std::printf("      only reference: %s\n", p.c_str());
  }
  print_ratio("find_files every page: reference / brig (times faster)", sfs.median / sball.median,
              ">= 5", sfs.median / sball.median >= 5, sfs.p10 / sball.p10);
  print_ratio("find_files first page: reference / brig (times faster)", sfs.median / sbfirst.median,
              ">= 5", sfs.median / sbfirst.median >= 5, sfs.p10 / sbfirst.p10);
  print_row("brig find_files, first page with its defaults (ignore files, no hidden)", sbdefault);
  print_ratio("find_files first page with brig's defaults, ms", sbdefault.median, "<= 20",
              sbdefault.median <= 20, sbdefault.p10);
}

// ---------------------------------------------------------------- main

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    auto count = [&] { return std::max(1, std::atoi(value().c_str())); };
    if (a == "--brig")
      o.brig = value();
    else if (a == "--bwrap")
      o.bwrap = value();
    else if (a == "--rg")
      o.rg = value();
    else if (a == "--node")
      o.node = value();
    else if (a == "--filesystem")
      o.filesystem = value();
    else if (a == "--workspace")
      o.workspace = value();
    else if (a == "--kernel")
      o.kernel = value();
    else if (a == "--text")
      o.text = value();
    else if (a == "--tiny")
      o.tiny = value();
    else if (a == "--exec-runs")
      o.exec_runs = count();
    else if (a == "--search-runs")
      o.search_runs = count();
    else if (a == "--read-runs")
      o.read_runs = count();
    else if (a == "--find-runs")
      o.find_runs = count();
    else if (a == "--only") {
      o.sections.clear();
      std::istringstream in(value());
      for (std::string s; std::getline(in, s, ',');) {
        if (s != "exec" && s != "search" && s != "files") die("unknown section " + s);
        o.sections.insert(s);
      }
    } else if (a == "--help" || a == "-h") {
      std::puts(
          "usage: brig-tools-bench --brig PATH --workspace DIR [--kernel REL] [--text REL]\n"
          "         [--tiny REL] [--node PATH --filesystem PATH/dist/index.js] [--bwrap PATH]\n"
          "         [--rg PATH] [--exec-runs N] [--search-runs N] [--read-runs N]\n"
          "         [--find-runs N] [--only exec,search,files]\n"
          "The kernel tree, the 1 MiB text file and the one-line file are paths relative to\n"
          "the workspace; run_tools_bench.sh prepares them.");
      std::exit(0);
    } else {
      die("unknown option " + a + " (see --help)");
    }
  }
  if (o.brig.empty() || o.workspace.empty()) die("--brig and --workspace are required");
  if (o.sections.contains("search") && o.kernel.empty()) die("search needs --kernel");
  if (o.sections.contains("files") && (o.kernel.empty() || o.text.empty() || o.tiny.empty() ||
                                       o.node.empty() || o.filesystem.empty()))
    die("files needs --kernel, --text, --tiny, --node and --filesystem");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);  // a peer that dies must not end the benchmark
  o.workspace = std::filesystem::canonical(o.workspace).string();
  std::printf("brig-tools-bench: workspace %s, uid %d, %ld CPUs\n", o.workspace.c_str(),
              static_cast<int>(::getuid()), ::sysconf(_SC_NPROCESSORS_ONLN));
  Client brig("brig serve", o.brig, {"serve", "--workspace", o.workspace});
  if (o.sections.contains("exec")) bench_exec(o, brig);
  if (o.sections.contains("search")) bench_search(o, brig);
  std::optional<Client> fs;
  if (o.sections.contains("files")) {
    fs.emplace("server-filesystem", o.node, std::vector<std::string>{o.filesystem, o.workspace});
    bench_files(o, brig, *fs);
  }
  std::printf("\nlargest reply line: brig %zu bytes", brig.largest_reply());
  if (fs) std::printf(", reference filesystem server %zu bytes", fs->largest_reply());
  std::printf("; over 10 MiB: %ld%s\n", oversized_replies,
              oversized_replies ? "  <-- !!! LOUD WARNING: see above !!!" : " (none)");
  return 0;
}
