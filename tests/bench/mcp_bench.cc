// brig-mcp-bench: one raw MCP client (newline-framed JSON-RPC, no JSON
// library on the hot path) drives brig-test-server's `echo` and the official
// TypeScript SDK server (@modelcontextprotocol/server-everything, its `echo`)
// in the same run, and prints the numbers and their ratios to brig's targets.
// Not a test: it passes or fails nothing. Run tests/bench/run_mcp_bench.sh.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <semaphore>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/server/wire_client.h"

namespace {

using brig::wire::ServerProcess;
using brig::wire::WireStream;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kTimeout = 60s;

struct Options {
  std::string brig;        // brig-test-server: echo round trips
  std::string front;       // brig: start-up and idle RSS of what ships (`brig serve`)
  std::string node;        // node, for the SDK server
  std::string everything;  // server-everything's dist/index.js
  int sequential = 5000;   // round trips timed one at a time
  int pipelined = 50000;   // requests for the throughput run
  int window = 256;        // requests in flight during it
  int warmup = 500;        // untimed requests before each run
  int brig_startups = 30;  // start-up samples
  int sdk_startups = 5;
  int rounds = 3;  // each run repeated, interleaved; medians reported
};

// How one server is started and how its echo is called.
struct Target {
  std::string name;
  std::string exe;
  std::vector<std::string> args;
  std::string echo_arguments;  // the arguments object of one echo call
};

// Where the sequential run's two processes may run. On a VM a wake-up from
// one vCPU to another can cost tens of microseconds, more than either server
// takes to answer, and with free placement the scheduler decides once per run
// whether client and server share a CPU (even /bin/cat's p50 moves by 10x
// between runs). So the round trip is also timed with both placements fixed:
// the client thread and the server's main thread (the one that reads
// requests; other threads, such as node's, stay free) on one CPU, and on two.
enum class Placement { free, one_cpu, two_cpus };

struct RunResult {
  double p50_ms = 0;  // free placement
  double p99_ms = 0;
  double one_cpu_p50_ms = 0;   // 0: not measured
  double two_cpus_p50_ms = 0;  // 0: not measured (fewer than two CPUs)
  double requests_per_s = 0;
  double client_cpu_share = 0;  // client CPU time / wall time in the pipelined run
  long errors = 0;
};

double ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "brig-mcp-bench: %s\n", why.c_str());
  std::exit(1);
}

std::string echo_request(const Target& t, long id) {
  return "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) +
         ",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":" +
         t.echo_arguments + "}}\n";
}

// A response (not a notification) is a line with a top-level id; echo
// results never hold another "id" member.
bool is_response(std::string_view line) {
  return line.find("\"id\":") != std::string_view::npos;
}
bool is_error(std::string_view line) {
  return line.find("\"error\":") != std::string_view::npos;
}

// The CPUs this process may use when the bench starts.
cpu_set_t allowed_cpus() {
  static const cpu_set_t allowed = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) die("sched_getaffinity failed");
    return set;
  }();
  return allowed;
}

// The n-th allowed CPU, or -1.
int nth_cpu(int n) {
  const cpu_set_t allowed = allowed_cpus();
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed) && n-- == 0) return cpu;
  }
  return -1;
}

bool pin(pid_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::sched_setaffinity(thread, sizeof set, &set) == 0;
}

// Places this thread and the server's main thread; false if this machine
// cannot (two CPUs needed for two_cpus).
bool place(pid_t server, Placement p) {
  const cpu_set_t allowed = allowed_cpus();
  switch (p) {
    case Placement::free:
      return ::sched_setaffinity(0, sizeof allowed, &allowed) == 0 &&
             ::sched_setaffinity(server, sizeof allowed, &allowed) == 0;
    case Placement::one_cpu:
      return pin(0, nth_cpu(0)) && pin(server, nth_cpu(0));
    case Placement::two_cpus:
      return nth_cpu(1) >= 0 && pin(0, nth_cpu(0)) && pin(server, nth_cpu(1));
  }
  return false;
}

// Reads lines until the next response; dies on timeout.
std::string next_response(WireStream& s) {
  for (;;) {
    auto line = s.read_line(kTimeout);
    if (!line) die("no answer from the server in time");
    if (is_response(*line)) return *line;
  }
}

// The legacy handshake both servers speak (the SDK server has no 2026-07-28).
void initialize(WireStream& s) {
  if (!s.write("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
               "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
               "\"clientInfo\":{\"name\":\"brig-mcp-bench\",\"version\":\"1\"}}}\n")) {
    die("cannot write initialize");
  }
  auto answer = next_response(s);
  if (is_error(answer)) die("initialize failed: " + answer.substr(0, 300));
  s.write("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
}

ServerProcess spawn(const Target& t, const std::vector<std::string>& extra, bool pipes) {
  auto args = t.args;
  args.insert(args.end(), extra.begin(), extra.end());
  auto p = ServerProcess::start(t.exe, args, pipes, /*quiet=*/true);
  if (!p) die("cannot start " + t.exe);
  return std::move(*p);
}

// Milliseconds from spawn to the answer of the first request (initialize).
double startup_ms(const Target& t) {
  auto start = Clock::now();
  auto p = spawn(t, {}, true);
  initialize(p.stream());
  double elapsed = ms(Clock::now() - start);
  p.stream().close_write();
  if (!p.wait_exit(10s)) std::fprintf(stderr, "  (%s did not exit on EOF)\n", t.name.c_str());
  return elapsed;
}

// VmRSS in MiB of pid and every process below it: `brig serve` is brig-server
// (exec'd in place) plus the brig-spawner it starts, and both are brig.
double rss_mib(pid_t pid) {
  double mib = 0;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) mib = std::stod(line.substr(6)) / 1024.0;
  }
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
  for (pid_t child; children >> child;) mib += rss_mib(child);
  return mib;
}

// Sequential round trips: warm-up requests, then `count` timed ones.
std::vector<double> round_trips(const Target& t, WireStream& s, int warmup, int count, long& id,
                                long& errors) {
  for (int i = 0; i < warmup; ++i) {
    s.write(echo_request(t, id++));
    if (is_error(next_response(s))) ++errors;
  }
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    std::string request = echo_request(t, id++);
    auto start = Clock::now();
    s.write(request);
    auto answer = next_response(s);
    samples.push_back(ms(Clock::now() - start));
    if (is_error(answer)) ++errors;
  }
  return samples;
}

RunResult measure(const Target& t, WireStream& s, pid_t server, const Options& o) {
  RunResult r;
  long id = 1;
  auto samples = round_trips(t, s, o.warmup, o.sequential, id, r.errors);
  r.p50_ms = percentile(samples, 0.50);
  r.p99_ms = percentile(samples, 0.99);
  // A few untimed round trips after each move let the caches follow.
  const int settle = std::max(1, o.warmup / 5);
  if (place(server, Placement::one_cpu)) {
    r.one_cpu_p50_ms = percentile(round_trips(t, s, settle, o.sequential, id, r.errors), 0.5);
  }
  if (place(server, Placement::two_cpus)) {
    r.two_cpus_p50_ms = percentile(round_trips(t, s, settle, o.sequential, id, r.errors), 0.5);
  }
  if (!place(server, Placement::free)) die("cannot undo the CPU placement");

  // Pipelined: a writer keeps `window` requests in flight, batching its
  // writes; this thread reads. The semaphore is the window.
  std::counting_semaphore<> slots(o.window);
  const long first = id;
  const long count = o.pipelined;
  double cpu_before = cpu_seconds();
  auto start = Clock::now();
  std::thread writer([&] {
    std::string batch;
    for (long n = 0; n < count;) {
      slots.acquire();
      batch.clear();
      batch += echo_request(t, first + n++);
      while (n < count && batch.size() < 64 * 1024 && slots.try_acquire()) {
        batch += echo_request(t, first + n++);
      }
      if (!s.write(batch)) die("server stopped reading");
    }
  });
  for (long received = 0; received < count; ++received) {
    if (is_error(next_response(s))) ++r.errors;
    slots.release();
  }
  double wall = std::chrono::duration<double>(Clock::now() - start).count();
  writer.join();
  r.requests_per_s = static_cast<double>(count) / wall;
  r.client_cpu_share = (cpu_seconds() - cpu_before) / wall;
  return r;
}

// The median of each number over rounds (errors: the total).
RunResult median(const std::vector<RunResult>& runs) {
  auto med = [&](double RunResult::*field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    return percentile(v, 0.5);
  };
  RunResult m;
  m.p50_ms = med(&RunResult::p50_ms);
  m.p99_ms = med(&RunResult::p99_ms);
  m.one_cpu_p50_ms = med(&RunResult::one_cpu_p50_ms);
  m.two_cpus_p50_ms = med(&RunResult::two_cpus_p50_ms);
  m.requests_per_s = med(&RunResult::requests_per_s);
  m.client_cpu_share = med(&RunResult::client_cpu_share);
  for (const auto& r : runs) m.errors += r.errors;
  return m;
}

// One stdio session: handshake, idle RSS after a pause, then the runs.
RunResult run_stdio(const Target& t, const Options& o, double* idle_rss_mib) {
  auto p = spawn(t, {}, true);
  initialize(p.stream());
  if (idle_rss_mib) {
    std::this_thread::sleep_for(300ms);
    *idle_rss_mib = rss_mib(p.pid());
  }
  RunResult r = measure(t, p.stream(), p.pid(), o);
  p.stream().close_write();
  if (!p.wait_exit(10s)) ::kill(p.pid(), SIGKILL);
  return r;
}

// One socket session: a listening server, one connection, the runs.
RunResult run_socket(const Target& t, const Options& o, const std::string& path) {
  auto server = spawn(t, {"--listen", "unix://" + path}, false);
  if (!brig::wire::wait_for_socket(path, kTimeout)) die("no socket at " + path);
  auto socket = WireStream::connect_unix(path);
  if (!socket) die("cannot connect to " + path);
  initialize(*socket);
  RunResult r = measure(t, *socket, server.pid(), o);
  socket.reset();
  ::kill(server.pid(), SIGTERM);
  if (!server.wait_exit(10s)) ::kill(server.pid(), SIGKILL);
  ::unlink(path.c_str());
  return r;
}

void print_run(const std::string& name, const RunResult& r) {
  std::printf("  %-30s %8.3f %8.3f %8.3f %8.3f %12.0f %9.0f%% %6ld\n", name.c_str(), r.p50_ms,
              r.p99_ms, r.one_cpu_p50_ms, r.two_cpus_p50_ms, r.requests_per_s,
              100 * r.client_cpu_share, r.errors);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(std::string(a) + " needs a value");
      return argv[++i];
    };
    if (a == "--brig")
      o.brig = value();
    else if (a == "--front")
      o.front = value();
    else if (a == "--node")
      o.node = value();
    else if (a == "--everything")
      o.everything = value();
    else if (a == "--sequential")
      o.sequential = std::stoi(value());
    else if (a == "--pipelined")
      o.pipelined = std::stoi(value());
    else if (a == "--window")
      o.window = std::stoi(value());
    else if (a == "--warmup")
      o.warmup = std::stoi(value());
    else if (a == "--startups")
      o.brig_startups = std::stoi(value());
    else if (a == "--rounds")
      o.rounds = std::stoi(value());
    else if (a == "--help" || a == "-h") {
      std::puts(
          "usage: brig-mcp-bench [--brig PATH] [--front PATH]\n"
          "                      [--node PATH --everything PATH/dist/index.js]\n"
          "                      [--sequential N] [--pipelined N] [--window N] [--warmup N]\n"
          "                      [--startups N] [--rounds N]\n"
          "Times echo round trips (sequential p50/p99, pipelined req/s) over stdio and a Unix\n"
          "socket (brig-test-server's echo), and the idle RSS and start-up to first answer of\n"
          "`brig serve` as it ships (--front: the brig front end), against the SDK server.");
      std::exit(0);
    } else {
      die("unknown argument " + std::string(a) + " (see --help)");
    }
  }
  if (o.brig.empty()) o.brig = brig::wire::sibling_executable("brig-test-server");
  if (o.front.empty()) o.front = brig::wire::sibling_executable("brig");
  if (o.window < 1 || o.sequential < 1 || o.pipelined < 1 || o.rounds < 1) {
    die("counts must be >= 1");
  }
  return o;
}

void print_ratio(const char* what, double value, const char* target, bool met) {
  std::printf("  %-44s %10.3f   target %-8s %s\n", what, value, target, met ? "met" : "MISSED");
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  // brig refuses a workspace that is /, $HOME or a system directory: give it its own.
  std::string workspace = brig::wire::make_temp_dir();
  if (workspace.empty()) die("cannot create a workspace under /tmp");
  Target brig{
      "brig-test-server", o.brig, {"serve", "--workspace", workspace}, "{\"text\":\"hello\"}"};
  std::optional<Target> sdk;
  if (!o.node.empty() && !o.everything.empty()) {
    sdk = Target{
        "server-everything (TS SDK)", o.node, {o.everything, "stdio"}, "{\"message\":\"hello\"}"};
  }
  // The floor: /bin/cat returns each request line as its "answer", so its
  // row is the pipe round trip with no server work, and the most this client
  // can drive (the client is not the bottleneck while a server's row stays
  // well below it).
  Target floor{"cat", "/bin/cat", {}, brig.echo_arguments};
  // What users start: the front end, which execs brig-server, which starts
  // brig-spawner (the file workers start on first use).
  Target shipped{"brig serve", o.front, {"serve", "--workspace", workspace}, ""};
  std::string path = workspace + "/b.sock";

  std::printf(
      "brig-mcp-bench: %d sequential round trips, %d pipelined requests (%d in flight), "
      "%d interleaved rounds, medians\n",
      o.sequential, o.pipelined, o.window, o.rounds);
  std::vector<RunResult> cat_runs, brig_runs, sock_runs, sdk_runs;
  std::vector<double> sdk_rss;
  for (int round = 0; round < o.rounds; ++round) {
    cat_runs.push_back(run_stdio(floor, o, nullptr));
    double rss = 0;
    brig_runs.push_back(run_stdio(brig, o, nullptr));
    sock_runs.push_back(run_socket(brig, o, path));
    if (sdk) {
      sdk_runs.push_back(run_stdio(*sdk, o, &rss));
      sdk_rss.push_back(rss);
    }
  }
  std::vector<double> brig_starts;
  for (int i = 0; i < o.brig_startups; ++i) brig_starts.push_back(startup_ms(shipped));
  // Idle RSS of what ships: after the handshake, the spawner started.
  std::vector<double> shipped_rss;
  for (int round = 0; round < o.rounds; ++round) {
    auto p = spawn(shipped, {}, true);
    initialize(p.stream());
    std::this_thread::sleep_for(300ms);
    shipped_rss.push_back(rss_mib(p.pid()));
    p.stream().close_write();
    if (!p.wait_exit(10s)) ::kill(p.pid(), SIGKILL);
  }
  std::vector<double> sdk_starts;
  if (sdk) {
    for (int i = 0; i < o.sdk_startups; ++i) sdk_starts.push_back(startup_ms(*sdk));
  }

  RunResult brig_pipe = median(brig_runs);
  RunResult brig_sock = median(sock_runs);
  std::printf("  %-30s %8s %8s %8s %8s %12s %10s %6s\n", "", "p50 ms", "p99 ms", "p50 ms", "p50 ms",
              "", "", "");
  std::printf("  %-30s %8s %8s %8s %8s %12s %10s %6s\n", "server / transport", "free", "free",
              "1 CPU", "2 CPUs", "pipelined/s", "client CPU", "errors");
  const RunResult floor_run = median(cat_runs);
  print_run("/bin/cat over pipes (floor)", floor_run);
  print_run("brig stdio", brig_pipe);
  print_run("brig unix socket", brig_sock);
  std::optional<RunResult> sdk_pipe;
  if (sdk) {
    sdk_pipe = median(sdk_runs);
    print_run("server-everything stdio", *sdk_pipe);
    std::printf("  %-30s (not offered: it serves stdio, SSE and Streamable HTTP only)\n",
                "server-everything unix socket");
  }

  double brig_idle_rss = percentile(shipped_rss, 0.5);
  double start = percentile(brig_starts, 0.5);
  std::printf("\nstart-up to first answer (initialize), median: brig serve %.2f ms (min %.2f)",
              start, percentile(brig_starts, 0));
  if (sdk) std::printf(", SDK server %.1f ms", percentile(sdk_starts, 0.5));
  std::printf(
      "\nidle RSS after the handshake, median: brig serve %.2f MiB (brig-server and "
      "brig-spawner)",
      brig_idle_rss);
  if (sdk) std::printf(", SDK server %.1f MiB", percentile(sdk_rss, 0.5));
  std::printf("\n\nagainst brig's targets:\n");
  if (sdk_pipe) {
    auto sequential = [&](const char* what, const RunResult& b, double RunResult::*p50) {
      if (b.*p50 <= 0 || (*sdk_pipe).*p50 <= 0) return;
      const double ratio = b.*p50 / (*sdk_pipe).*p50;
      print_ratio(what, ratio, "<= 0.3", ratio <= 0.3);
    };
    sequential("sequential p50 free, brig / SDK (stdio)", brig_pipe, &RunResult::p50_ms);
    sequential("sequential p50 1 CPU, brig / SDK (stdio)", brig_pipe, &RunResult::one_cpu_p50_ms);
    sequential("sequential p50 2 CPUs, brig / SDK (stdio)", brig_pipe, &RunResult::two_cpus_p50_ms);
    double thr = brig_pipe.requests_per_s / sdk_pipe->requests_per_s;
    print_ratio("pipelined req/s, brig / SDK (stdio)", thr, ">= 10", thr >= 10);
    sequential("sequential p50 free, brig socket / SDK", brig_sock, &RunResult::p50_ms);
    sequential("sequential p50 1 CPU, brig socket / SDK", brig_sock, &RunResult::one_cpu_p50_ms);
    sequential("sequential p50 2 CPUs, brig socket / SDK", brig_sock, &RunResult::two_cpus_p50_ms);
    double thr_sock = brig_sock.requests_per_s / sdk_pipe->requests_per_s;
    print_ratio("pipelined req/s, brig socket / SDK stdio", thr_sock, ">= 10", thr_sock >= 10);
    // The floor bounds every sequential ratio from below: a server that did
    // nothing would still take cat's time. On one CPU the server's own share
    // is what it adds to the floor; across two, wake-ups dominate and vary
    // more than that share, so only the bound is printed.
    std::printf("\n  reading the sequential ratios (stdio; free placement is chance):\n");
    auto floor_line = [&](const char* placement, double RunResult::*p50, bool share) {
      const double f = floor_run.*p50, b = brig_pipe.*p50, k = (*sdk_pipe).*p50;
      if (f <= 0 || b <= 0 || k <= 0) return;
      std::printf("  %-7s floor / SDK %.2f: no server can have a smaller ratio here", placement,
                  f / k);
      if (share && k > f) {
        std::printf("; above the floor, brig / SDK %.2f (%.1f vs %.1f us)", (b - f) / (k - f),
                    1000 * (b - f), 1000 * (k - f));
      }
      std::printf("\n");
    };
    floor_line("1 CPU", &RunResult::one_cpu_p50_ms, true);
    floor_line("2 CPUs", &RunResult::two_cpus_p50_ms, false);
  } else {
    std::printf("  (no SDK server given: --node and --everything; ratios skipped)\n");
  }
  print_ratio("brig idle RSS, MiB", brig_idle_rss, "<= 8", brig_idle_rss <= 8);
  print_ratio("brig start-up to first answer, ms", start, "<= 10", start <= 10);
  ::rmdir(workspace.c_str());
  return 0;
}
