// brig-egress-bench: the benchmarks of issue 13's network modes, each
// against named peers measured in the same run. Not a test: it passes or
// fails nothing. Run tests/bench/run_egress_bench.sh, which installs and
// starts the peers (tinyproxy, squid) on loopback and hands their ports and
// pids here.
//
//   start       `brig run -- /bin/true` with a `proxy` (and as root a `filtered`)
//               policy against `none`
//               (alternating, medians of --starts).
//   throughput  a download through CONNECT: brig's relay, tinyproxy, squid,
//               and the direct connection as the floor.
//   latency     small plain-HTTP requests, each on a new connection, through
//               the same four; added p50 over the direct connection.
//   memory      brig's relay holding --jails jails with --per-jail idle
//               CONNECT tunnels each: its process's VmRSS growth; the peers
//               holding as many tunnels, for scale.
//
// brig's relay runs in this process (an egress::Relay on its own thread,
// serving a proxy listener made here on 127.0.0.1, as a jail's helper would
// make it on the jail's loopback), except for the memory section, where it
// runs in a child process of this program so that its RSS is its own.
// Everything is on loopback: the upstream is a small server in this process
// (a byte source for the download, a tiny HTTP responder), named `up.test`
// for brig through the policy's `hosts` (which is what allows an upstream on
// 127.0.0.1), and 127.0.0.1 for the peers.
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "jail/base/unique_fd.h"
#include "jail/launcher.h"
#include "jail/netfilter/ruleset.h"
#include "jail/netfilter/veth.h"
#include "server/egress/relay.h"
#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/net_rules.h"
#include "server/policy/to_jail_spec.h"
#include "tests/bench/bench_stats.h"
#include "tests/bench/bwrap_peer.h"
#include "tests/server/loopback.h"

namespace {

using brig::UniqueFd;
using brig::bench::Clock;
using brig::bench::load_average;
using brig::bench::ms_since;
using brig::bench::stats;
using brig::bench::Stats;
namespace egress = brig::egress;
namespace policy = brig::policy;

constexpr const char* kUpstreamName = "up.test";
constexpr std::size_t kSmallBody = 100;  // bytes of each small response's body

struct Options {
  std::string brig;  // empty: no start section
  std::vector<std::string> only;
  int starts = 300;
  int requests = 2000;
  std::uint64_t download_mib = 1024;
  int rounds = 5;
  int jails = 100;
  int per_jail = 10;
  std::uint16_t tinyproxy_port = 0;
  pid_t tinyproxy_pid = 0;
  std::uint16_t squid_port = 0;
  pid_t squid_pid = 0;
  // The upstreams' ports (0: ephemeral); the peers' configurations allow
  // CONNECT to these two only.
  std::uint16_t upstream_port = 0;
  std::uint16_t holder_port = 0;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "brig-egress-bench: %s\n", why.c_str());
  std::exit(1);
}

// VmRSS of a process in KiB (0 when unreadable).
long vmrss_kib(const std::string& pid = "self") {
  std::ifstream in("/proc/" + pid + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmRSS:")) return std::atol(line.c_str() + 6);
  return 0;
}

// User + system CPU time of a whole process, dead threads included
// (/proc/PID/stat; clock-tick resolution), in ms.
double process_cpu_ms(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) * 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// CPU time of one of this process's threads, in ms (schedstat: ns).
double thread_cpu_ms(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  unsigned long long ns = 0;
  in >> ns;
  return static_cast<double>(ns) / 1e6;
}

std::set<pid_t> my_threads() {
  std::set<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    out.insert(std::atoi(e.path().filename().c_str()));
  return out;
}

void raise_fd_limit() {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &r);
}

// ------------------------------------------------------------ sockets

using brig::testing::loopback::port_of;

// A TCP listener on 127.0.0.1; port 0: an ephemeral one.
UniqueFd listener(int flags = 0, std::uint16_t port = 0) {
  UniqueFd fd = brig::testing::loopback::bound(SOCK_STREAM | flags, port, 4096);
  if (!fd) die(std::string("listen on 127.0.0.1: ") + std::strerror(errno));
  return fd;
}

UniqueFd connect_to(std::uint16_t port) {
  // Bounded, so that a peer that stops answering ends the run with a
  // message instead of hanging it.
  UniqueFd fd = brig::testing::loopback::connect_to(port, std::chrono::seconds(30));
  if (!fd) die("connect to 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno));
  return fd;
}

void send_all(int fd, std::string_view bytes) {
  if (!brig::testing::loopback::send_all(fd, bytes))
    die(std::string("send: ") + std::strerror(errno));
}

// Reads until the end of an HTTP head; returns the head, and in `rest`
// whatever came after it in the same reads.
std::string read_head(int fd, std::string& rest, const char* what) {
  std::string in;
  char buf[4096];
  for (;;) {
    auto end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      rest = in.substr(end + 4);
      in.resize(end + 4);
      return in;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      die(std::string(what) + ": the connection ended before a response head (" +
          (n == 0 ? "EOF" : std::strerror(errno)) + ")" +
          (in.empty() ? "" : ", after: " + in.substr(0, 200)));
    in.append(buf, static_cast<std::size_t>(n));
  }
}

int status_of(const std::string& head) {
  // "HTTP/1.1 200 ..."
  auto sp = head.find(' ');
  return sp == std::string::npos ? 0 : std::atoi(head.c_str() + sp + 1);
}

std::uint64_t content_length(const std::string& head) {
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return UINT64_MAX;  // delimited by the close
  return std::strtoull(lower.c_str() + at + 17, nullptr, 10);
}

// Reads a response's body to its Content-Length (or EOF); its size.
std::uint64_t read_body(int fd, std::uint64_t length, std::uint64_t already, char* buf,
                        std::size_t cap) {
  std::uint64_t got = already;
  while (got < length) {
    ssize_t n =
        ::recv(fd, buf, static_cast<std::size_t>(std::min<std::uint64_t>(cap, length - got)), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::uint64_t>(n);
  }
  return got;
}

// ------------------------------------------------------------ upstream

// The upstream: one connection at a time (the benchmarks make one at a
// time, and a serial server adds the same to every path), an HTTP/1.1
// responder that closes after each response. GET /bytes/N answers N bytes;
// anything else a kSmallBody-byte body. Responses are marked no-store so
// that squid cannot answer from its cache.
class Upstream {
 public:
  explicit Upstream(std::uint16_t port)
      : listener_(listener(0, port)), port_(port_of(listener_.get())) {
    payload_.assign(1 << 20, 'x');
    thread_ = std::thread([this] { serve(); });
  }
  ~Upstream() {
    ::shutdown(listener_.get(), SHUT_RDWR);  // wakes accept
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  void serve() {
    for (;;) {
      UniqueFd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // shut down
      }
      // A proxy that connects and never asks must not stall the others.
      timeval tv{10, 0};
      ::setsockopt(c.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(c.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      answer(c.get());
    }
  }
  void answer(int fd) {
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<std::size_t>(n));
    }
    std::uint64_t size = kSmallBody;
    constexpr std::string_view kBytes = "GET /bytes/";
    if (in.starts_with(kBytes)) size = std::strtoull(in.c_str() + kBytes.size(), nullptr, 10);
    std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
        "Cache-Control: no-store\r\nConnection: close\r\nContent-Length: " +
        std::to_string(size) + "\r\n\r\n";
    if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(head.size()))
      return;
    for (std::uint64_t left = size; left > 0;) {
      ssize_t n =
          ::send(fd, payload_.data(), std::min<std::uint64_t>(left, payload_.size()), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      left -= static_cast<std::uint64_t>(n);
    }
  }

  UniqueFd listener_;
  std::uint16_t port_;
  std::string payload_;
  std::thread thread_;
};

// An upstream that accepts and holds connections without a word: the far
// end of the idle tunnels of the memory section.
class Holder {
 public:
  explicit Holder(std::uint16_t port)
      : listener_(listener(0, port)), port_(port_of(listener_.get())) {
    thread_ = std::thread([this] {
      for (;;) {
        int c = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          return;
        }
        std::lock_guard lock(mutex_);
        held_.emplace_back(c);
      }
    });
  }
  ~Holder() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  void drop_all() {
    std::lock_guard lock(mutex_);
    held_.clear();
  }

 private:
  UniqueFd listener_;
  std::uint16_t port_;
  std::mutex mutex_;
  std::vector<UniqueFd> held_;
  std::thread thread_;
};

// ------------------------------------------------------------ proxies

// One way to reach the upstream: directly, or through a forward proxy on a
// loopback port, naming the upstream as `host`.
struct Path {
  std::string name;
  std::uint16_t proxy = 0;  // 0: direct
  std::string host;         // how the proxy is asked for the upstream
  pid_t pid = 0;            // a peer's process (for its CPU time); 0: none
};

// brig's policy for the benchmark: `up.test:PORT` allowed, `up.test` named
// 127.0.0.1 in `hosts` (loopback is refused unless the policy names it).
policy::NetRules bench_rules(std::uint16_t upstream_port) {
  policy::NetRules rules;
  auto allow =
      policy::parse_net_rule(std::string(kUpstreamName) + ":" + std::to_string(upstream_port));
  if (!allow) die("the bench's allow rule: " + allow.error().to_string());
  rules.allow.push_back(*allow);
  rules.hosts.push_back({kUpstreamName, *policy::parse_address("127.0.0.1")});
  return rules;
}

// Opens a CONNECT tunnel to host:port through `p` (or connects directly);
// dies unless the proxy answers 200.
UniqueFd open_tunnel(const Path& p, std::uint16_t upstream_port) {
  if (!p.proxy) return connect_to(upstream_port);
  UniqueFd fd = connect_to(p.proxy);
  const std::string target = p.host + ":" + std::to_string(upstream_port);
  send_all(fd.get(), "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
  std::string rest;
  std::string head = read_head(fd.get(), rest, p.name.c_str());
  if (status_of(head) != 200)
    die(p.name + " refused CONNECT " + target + ": " + head.substr(0, head.find("\r\n")));
  if (!rest.empty()) die(p.name + ": bytes after the CONNECT answer before any request");
  return fd;
}

struct Download {
  double seconds = 0;
  double proxy_cpu_ms = 0;  // the proxy's CPU time during the download
};

// GET /bytes/N through a CONNECT tunnel (the tunnel's setup is not timed).
Download download(const Path& p, std::uint16_t upstream_port, std::uint64_t bytes,
                  const std::function<double()>& proxy_cpu) {
  UniqueFd fd = open_tunnel(p, upstream_port);
  static std::vector<char> buf(256 * 1024);
  const double cpu0 = proxy_cpu();
  const auto t0 = Clock::now();
  send_all(fd.get(), "GET /bytes/" + std::to_string(bytes) +
                         " HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n");
  std::string rest;
  std::string head = read_head(fd.get(), rest, p.name.c_str());
  if (status_of(head) != 200) die(p.name + ": download answered " + head.substr(0, 40));
  std::uint64_t got = read_body(fd.get(), bytes, rest.size(), buf.data(), buf.size());
  Download d;
  d.seconds = ms_since(t0) / 1000.0;
  d.proxy_cpu_ms = proxy_cpu() - cpu0;
  if (got != bytes)
    die(p.name + ": download ended after " + std::to_string(got) + " of " + std::to_string(bytes) +
        " bytes");
  return d;
}

// One small request on a new connection: connect to its answer's last byte.
double small_request(const Path& p, std::uint16_t upstream_port) {
  const auto t0 = Clock::now();
  UniqueFd fd = connect_to(p.proxy ? p.proxy : upstream_port);
  const std::string authority = p.host + ":" + std::to_string(upstream_port);
  // A proxy is asked with the absolute URI; the upstream with the path.
  const std::string target = p.proxy ? "http://" + authority + "/small" : "/small";
  send_all(fd.get(),
           "GET " + target + " HTTP/1.1\r\nHost: " + authority + "\r\nConnection: close\r\n\r\n");
  std::string rest;
  std::string head = read_head(fd.get(), rest, p.name.c_str());
  char buf[4096];
  std::uint64_t got = read_body(fd.get(), content_length(head), rest.size(), buf, sizeof buf);
  const double ms = ms_since(t0);
  if (status_of(head) != 200 || got != kSmallBody)
    die(p.name + ": small request answered " + head.substr(0, head.find("\r\n")) + " with " +
        std::to_string(got) + " body bytes");
  return ms;
}

// brig's relay in this process: a proxy listener on 127.0.0.1 (as a jail's
// network helper makes it on the jail's loopback), one jail.
struct InProcessRelay {
  std::unique_ptr<egress::Relay> relay;
  std::uint16_t port = 0;
  std::set<pid_t> threads;  // the relay's (threads that appeared when it started)

  explicit InProcessRelay(std::uint16_t upstream_port) {
    auto before = my_threads();
    auto r = egress::Relay::start(egress::RelayOptions{});
    if (!r) die("start the relay: " + r.error().to_string());
    relay = std::move(*r);
    for (pid_t t : my_threads())
      if (!before.count(t)) threads.insert(t);
    egress::JailListeners l;
    l.proxy = listener(SOCK_NONBLOCK);
    port = port_of(l.proxy.get());
    relay->add_jail("bench", bench_rules(upstream_port), std::move(l));
  }
  double cpu_ms() const {
    double ms = 0;
    for (pid_t t : threads) ms += thread_cpu_ms(t);
    return ms;
  }
};

std::vector<Path> paths(const Options& o, const InProcessRelay& relay) {
  std::vector<Path> out = {{"direct (floor)", 0, "127.0.0.1", 0},
                           {"brig relay (in-process)", relay.port, kUpstreamName, 0}};
  if (o.tinyproxy_port)
    out.push_back({"tinyproxy", o.tinyproxy_port, "127.0.0.1", o.tinyproxy_pid});
  if (o.squid_port) out.push_back({"squid", o.squid_port, "127.0.0.1", o.squid_pid});
  return out;
}

double median_of(std::vector<double> v) {
  return stats(std::move(v)).median;
}

// ------------------------------------------------------------ sections

// Where proxy mode's start cost goes, measured in this process (still
// single-threaded here, as jail::spawn wants): the jail alone, each policy's
// plan spawned and waited for as `brig run` does but without the relay (so
// the difference is the listeners, resolv.conf and Landlock rules the plan
// adds), then the relay `brig run` starts once the jail is spawned:
// Relay::start, add_jail with the three listeners, and its destruction.
void attribute_start(const std::string& ws, const std::string& none, const std::string& proxy,
                     int runs) {
  policy::EnvMap env = policy::current_environment();
  const std::string home = policy::caller_home(env);
  const policy::Context ctx = policy::caller_context(ws, ws, env, home);
  struct Plan {
    brig::jail::JailSpec spec;
    brig::jail::ExecRequest request;
  };
  auto plan = [&](const std::string& file) {
    auto loaded = policy::load_policy(file, policy::Expansion{home, env});
    if (!loaded) die("load " + file + ": " + loaded.error().front().to_string());
    auto spec = policy::to_jail_spec(loaded->policy, ctx);
    if (!spec) die("plan " + file + ": " + spec.error().to_string());
    Plan p{std::move(*spec), policy::exec_request(loaded->policy, ctx, {"/bin/true"})};
    p.request.stdout_fd = p.request.stderr_fd = -1;
    return p;
  };
  const Plan pn = plan(none), pp = plan(proxy);
  auto jail_ms = [](const Plan& p) {
    const auto t0 = Clock::now();
    auto jailed = brig::jail::spawn(p.spec, p.request);
    if (!jailed) die("spawn: " + jailed.error().to_string());
    auto outcome = brig::jail::wait_until_status(*jailed);
    if (!outcome || outcome->exit_status() != 0) die("the jail of /bin/true failed");
    return ms_since(t0);
  };
  std::vector<double> jn, jp;
  for (int i = 0; i < runs; ++i) {
    const bool flip = i % 2;  // as above: neither always second
    jn.push_back(jail_ms(flip ? pp : pn));
    jp.push_back(jail_ms(flip ? pn : pp));
    if (flip) std::swap(jn.back(), jp.back());
  }
  std::vector<double> start_ms, cycle_ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    auto r = egress::Relay::start(egress::RelayOptions{});
    if (!r) die("start the relay: " + r.error().to_string());
    start_ms.push_back(ms_since(t0));
    egress::JailListeners l;
    l.proxy = listener(SOCK_NONBLOCK);
    l.dns_tcp = listener(SOCK_NONBLOCK);
    l.dns_udp = UniqueFd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    (*r)->add_jail("bench", bench_rules(80), std::move(l));
    r->reset();
    cycle_ms.push_back(ms_since(t0));
  }
  const double dn = stats(jn).median, dp = stats(jp).median;
  std::printf("  where it goes (in this process, %d runs each, medians):\n", runs);
  std::printf("    jail::spawn + wait of /bin/true, none's plan   %6.3f ms\n", dn);
  std::printf(
      "    the same, proxy's plan (no relay)             %6.3f ms   (%+.3f ms: listeners,\n"
      "      resolv.conf, Landlock's TCP rules)\n",
      dp, dp - dn);
  std::printf("    Relay::start (c-ares init, epoll, its thread)  %6.3f ms\n",
              stats(start_ms).median);
  std::printf(
      "    Relay::start + add_jail + ~Relay               %6.3f ms   (brig run _exits: no "
      "~Relay)\n",
      stats(cycle_ms).median);
}

void section_start(const Options& o) {
  std::printf(
      "\n== 1. jail start per network mode (brig run -- /bin/true, %d alternating runs each)\n",
      o.starts);
  if (o.brig.empty()) {
    std::printf("  not run: no --brig\n");
    return;
  }
  char tmpl[] = "/tmp/brig-egress-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) die("mkdtemp");
  // The policies outside the workspace: brig refuses a policy file the
  // jail could rewrite.
  const std::string dir = tmpl, ws = dir + "/workspace";
  std::filesystem::create_directory(ws);
  // Both extend default and differ only in [network], so the difference is
  // the mode's own cost.
  const std::string none = dir + "/none.toml", proxy = dir + "/proxy.toml";
  std::ofstream(none) << "extends = \"default\"\n[network]\nmode = \"none\"\n";
  std::ofstream(proxy) << "extends = \"default\"\n[network]\nmode = \"proxy\"\n"
                          "allow = [\"example.com\"]\n";
  using brig::bench::Command;
  auto run = [&](const std::string& policy) {
    return Command{{o.brig, "run", "--policy", policy, "--", "/bin/true"}, ws, {}};
  };
  auto time_one = [](const Command& c) {
    const auto t0 = Clock::now();
    const int status = brig::bench::finish(brig::bench::start(c));
    const double ms = ms_since(t0);
    if (status != 0)
      die(c.argv[0] + " " + c.argv[3] + " exited " + std::to_string(status) +
          "; run it by hand to see why");
    return ms;
  };
  // What the proxy jail has, seen from inside: until `brig run` wires proxy
  // mode, a proxy policy builds the jail as `none`, and the comparison
  // would only time the policy's parsing; this says which it is.
  std::printf("  inside the proxy jail:\n");
  const std::string look = "cd " + ws + " && " + o.brig + " run --policy " + proxy +
                           " -- /bin/sh -c 'grep -c \"^ *[0-9]*: 0100007F:0C38 00000000:0000 0A\" "
                           "/proc/net/tcp; echo \"${HTTP_PROXY:-(unset)}\"' 2>&1";
  std::string seen;
  if (FILE* f = ::popen(look.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) seen += buf;
    ::pclose(f);
  }
  std::istringstream lines(seen);
  std::string listeners, http_proxy;
  std::getline(lines, listeners);
  std::getline(lines, http_proxy);
  // The listener is what proxy mode costs at start; HTTP_PROXY is shown for
  // information.
  const bool wired = std::atoi(listeners.c_str()) > 0;
  std::printf("    listeners on 127.0.0.1:3128 (/proc/net/tcp): %s; HTTP_PROXY=%s\n",
              listeners.c_str(), http_proxy.c_str());
  if (!wired)
    std::printf(
        "    NOTE: this brig does not wire proxy mode into `brig run` yet: the proxy jail is\n"
        "    built as `none`, so the difference below is the policy's parsing only, and the\n"
        "    target is not judged\n");

  const std::string load0 = load_average();
  for (int i = 0; i < 10; ++i) time_one(run(none)), time_one(run(proxy));
  std::vector<double> a, b;
  // The order flips every pair (none first, then proxy first): whichever
  // runs second after a pause would otherwise always find warmer caches.
  for (int i = 0; i < o.starts; ++i) {
    if (i % 2 == 0) {
      a.push_back(time_one(run(none)));
      b.push_back(time_one(run(proxy)));
    } else {
      b.push_back(time_one(run(proxy)));
      a.push_back(time_one(run(none)));
    }
  }
  const Stats sa = stats(a), sb = stats(b);
  auto row = [](const char* name, const Stats& s) {
    std::printf("  %-34s median %6.2f ms   p10 %6.2f   p90 %6.2f\n", name, s.median, s.p10, s.p90);
  };
  row("mode = \"none\"", sa);
  row("mode = \"proxy\"", sb);
  // The runs are paired (none and proxy back to back): the median of each pair's
  // difference is less moved by load that drifts over the run.
  std::vector<double> diff;
  for (std::size_t i = 0; i < a.size(); ++i) diff.push_back(b[i] - a[i]);
  const double added = sb.median - sa.median;
  std::printf(
      "  proxy adds %+.3f ms to the median (ratio %.3f); median of paired differences %+.3f ms\n",
      added, sb.median / sa.median, stats(diff).median);
  std::printf("  target <= +0.3 ms: %s\n", !wired         ? "not judged (proxy mode not wired)"
                                           : added <= 0.3 ? "met"
                                                          : "NOT met");
  // On a loaded machine the runs' spread is many times the target and the
  // difference of medians swings by a millisecond from run to run; the
  // attribution below, in one process, is steadier.
  if (sa.p90 - sa.p10 > 10 * 0.3)
    std::printf(
        "  CAUTION: the p10-p90 spread (%.1f ms) dwarfs the 0.3 ms target: the verdict\n"
        "  above is within the noise; rerun on a quiet machine\n",
        sa.p90 - sa.p10);
  if (wired) attribute_start(ws, none, proxy, std::min(o.starts, 100));

  // filtered, against none, in a network namespace of the bench's own: it
  // needs forwarding on, which the bench must not turn on in the host's, and
  // its host table goes with the namespace.
  const std::string filtered = dir + "/filtered.toml";
  std::ofstream(filtered) << "extends = \"default\"\n[network]\nmode = \"filtered\"\n"
                             "allow = [\"10.77.0.0/24:80\", \"web.test:8080\"]\n"
                             "hosts = { \"web.test\" = \"10.77.0.2\" }\n";
  if (::geteuid() != 0) {
    std::printf("  mode = \"filtered\": not measured (needs root for its veth and NAT rules)\n");
  } else if (const pid_t child = ::fork(); child == 0) {
    if (::unshare(CLONE_NEWNET) != 0 || std::system("ip link set lo up") != 0) _exit(3);
    std::ofstream("/proc/sys/net/ipv4/ip_forward") << "1\n";
    for (int i = 0; i < 10; ++i) time_one(run(none)), time_one(run(filtered));
    std::vector<double> n, f, d;
    for (int i = 0; i < o.starts; ++i) {
      const bool first = i % 2 == 0;
      if (first) n.push_back(time_one(run(none)));
      f.push_back(time_one(run(filtered)));
      if (!first) n.push_back(time_one(run(none)));
      d.push_back(f.back() - n.back());
    }
    const Stats sn = stats(n), sf = stats(f);
    row("mode = \"none\" (own netns)", sn);
    row("mode = \"filtered\"", sf);
    const double added_f = sf.median - sn.median;
    std::printf(
        "  filtered adds %+.3f ms to the median (ratio %.3f); median of paired differences "
        "%+.3f ms\n  target <= +1.5 ms: %s\n",
        added_f, sf.median / sn.median, stats(d).median, added_f <= 1.5 ? "met" : "NOT met");
    // The kernel's part, the floor of any veth-based mode: making the pair
    // into a fresh namespace and giving the host end its address, timed
    // here in-process (no program, no nftables).
    std::vector<double> veth_ms;
    for (int i = 0; i < std::min(o.starts, 100); ++i) {
      int ready[2];
      if (::pipe(ready) != 0) break;
      const pid_t holder = ::fork();
      if (holder == 0) {
        char c = 0;
        if (::unshare(CLONE_NEWNET) == 0) (void)!::write(ready[1], &c, 1);
        ::pause();
        _exit(0);
      }
      char c;
      if (::read(ready[0], &c, 1) != 1) break;
      ::close(ready[0]);
      ::close(ready[1]);
      const int ns = ::open(("/proc/" + std::to_string(holder) + "/ns/net").c_str(), O_RDONLY);
      const auto t0 = Clock::now();
      auto index = brig::jail::netfilter::create_veth(ns, 0);
      if (index) {
        const std::string name = brig::jail::netfilter::veth_name(*index);
        if (auto sock = brig::jail::netfilter::open_rtnetlink())
          (void)brig::jail::netfilter::address_and_up(
              sock->get(), ::if_nametoindex(name.c_str()), name,
              brig::jail::netfilter::host_address(*index), 30);
      }
      veth_ms.push_back(ms_since(t0));
      ::close(ns);
      ::kill(holder, SIGKILL);
      ::waitpid(holder, nullptr, 0);
      if (!index) break;
    }
    if (!veth_ms.empty())
      std::printf(
          "  of which the kernel's veth pair into the jail's namespace, host end up (in-process, "
          "the floor): median %.3f ms\n",
          stats(veth_ms).median);
    std::fflush(stdout);
    _exit(0);
  } else if (child > 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      std::printf("  mode = \"filtered\": not measured (its namespace could not be set up)\n");
  }
  std::printf("  load average before / after: %s / %s\n", load0.c_str(), load_average().c_str());
  std::filesystem::remove_all(dir);
}

void section_throughput(const Options& o, const Upstream& up, const InProcessRelay& relay) {
  const std::uint64_t bytes = o.download_mib << 20;
  std::printf("\n== 2a. download of %llu MiB through CONNECT (%d rounds, alternating; median)\n",
              static_cast<unsigned long long>(o.download_mib), o.rounds);
  const auto ps = paths(o, relay);
  std::vector<std::vector<double>> secs(ps.size()), cpu(ps.size());
  const std::string load0 = load_average();
  for (int r = 0; r < o.rounds; ++r) {
    for (std::size_t i = 0; i < ps.size(); ++i) {
      const Path& p = ps[i];
      std::function<double()> proxy_cpu = [] { return 0.0; };
      if (p.pid) proxy_cpu = [pid = p.pid] { return process_cpu_ms(pid); };
      if (p.proxy && !p.pid) proxy_cpu = [&relay] { return relay.cpu_ms(); };
      Download d = download(p, up.port(), bytes, proxy_cpu);
      secs[i].push_back(d.seconds);
      cpu[i].push_back(d.proxy_cpu_ms);
    }
  }
  std::vector<double> mibs(ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const Stats s = stats(secs[i]);
    mibs[i] = static_cast<double>(o.download_mib) / s.median;
    std::printf("  %-26s %8.0f MiB/s   (median %.3f s; min %.3f, max %.3f)", ps[i].name.c_str(),
                mibs[i], s.median, *std::min_element(secs[i].begin(), secs[i].end()),
                *std::max_element(secs[i].begin(), secs[i].end()));
    if (ps[i].proxy)
      std::printf("   proxy CPU %.0f ms/GiB",
                  median_of(cpu[i]) * 1024.0 / static_cast<double>(o.download_mib));
    std::printf("\n");
  }
  double best_peer = 0;
  std::string best;
  for (std::size_t i = 2; i < ps.size(); ++i)
    if (mibs[i] > best_peer) best_peer = mibs[i], best = ps[i].name;
  std::printf("  brig / direct: %.2f", mibs[1] / mibs[0]);
  if (best_peer > 0)
    std::printf("   brig / %s (the better peer): %.2f (target >= 1.00: %s)", best.c_str(),
                mibs[1] / best_peer, mibs[1] >= best_peer ? "met" : "NOT met");
  else
    std::printf("   no peer ran: target not judged");
  std::printf("\n  load average before / after: %s / %s\n", load0.c_str(), load_average().c_str());
}

void section_latency(const Options& o, const Upstream& up, const InProcessRelay& relay) {
  std::printf(
      "\n== 2b. %d small HTTP requests (GET, %zu-byte body), each on a new connection, "
      "alternating; connect to last byte\n",
      o.requests, kSmallBody);
  const auto ps = paths(o, relay);
  for (int i = 0; i < 50; ++i)
    for (const Path& p : ps) small_request(p, up.port());
  std::vector<std::vector<double>> ms(ps.size());
  // Each proxy's CPU time over its own requests (the others do not touch
  // it), for the CPU a request costs it.
  auto proxy_cpu = [&](const Path& p) {
    return p.pid ? process_cpu_ms(p.pid) : p.proxy ? relay.cpu_ms() : 0.0;
  };
  std::vector<double> cpu0(ps.size());
  for (std::size_t k = 0; k < ps.size(); ++k) cpu0[k] = proxy_cpu(ps[k]);
  const std::string load0 = load_average();
  for (int i = 0; i < o.requests; ++i)
    for (std::size_t k = 0; k < ps.size(); ++k) ms[k].push_back(small_request(ps[k], up.port()));
  std::vector<double> p50(ps.size());
  for (std::size_t k = 0; k < ps.size(); ++k) {
    const Stats s = stats(ms[k]);
    p50[k] = s.median;
    std::printf("  %-26s p50 %7.1f us   p10 %7.1f   p90 %7.1f", ps[k].name.c_str(), s.median * 1e3,
                s.p10 * 1e3, s.p90 * 1e3);
    if (k > 0)
      std::printf("   added p50 %+7.1f us   proxy CPU %5.1f us/request", (s.median - p50[0]) * 1e3,
                  (proxy_cpu(ps[k]) - cpu0[k]) * 1e3 / o.requests);
    std::printf("\n");
  }
  double best_added = -1;
  std::string best;
  for (std::size_t k = 2; k < ps.size(); ++k)
    if (best_added < 0 || p50[k] - p50[0] < best_added)
      best_added = p50[k] - p50[0], best = ps[k].name;
  const double brig_added = p50[1] - p50[0];
  if (best_added >= 0)
    std::printf(
        "  brig's added p50 / %s's (the better peer): %.2f (target <= 1.00: %s, by %+.1f us)\n",
        best.c_str(), brig_added / best_added, brig_added <= best_added ? "met" : "NOT met",
        (brig_added - best_added) * 1e3);
  else
    std::printf("  no peer ran: target not judged\n");
  std::printf("  load average before / after: %s / %s\n", load0.c_str(), load_average().c_str());
}

// The relay holder: a child process (this program with --relay-holder)
// whose only job is to run the relay, so that its VmRSS is the relay's.
// Protocol over its stdin/stdout, one line each: it prints
// "ready RSS0 RSS1 RSS2 PORT…" (before the relay, relay started, jails
// added), then answers "measure" with "rss KIB conns N" and exits on "quit".
int relay_holder(int jails, std::uint16_t upstream_port) {
  raise_fd_limit();
  const long rss0 = vmrss_kib();
  auto r = egress::Relay::start(egress::RelayOptions{});
  if (!r) die("start the relay: " + r.error().to_string());
  auto relay = std::move(*r);
  const long rss1 = vmrss_kib();
  std::string ports;
  for (int j = 0; j < jails; ++j) {
    egress::JailListeners l;
    l.proxy = listener(SOCK_NONBLOCK);
    ports += " " + std::to_string(port_of(l.proxy.get()));
    relay->add_jail("jail" + std::to_string(j), bench_rules(upstream_port), std::move(l));
  }
  // add_jail only queues the jail; removing an id that does not exist waits
  // until the relay's thread has taken every command queued before it.
  relay->remove_jail(UINT64_MAX);
  const long rss2 = vmrss_kib();
  std::printf("ready %ld %ld %ld%s\n", rss0, rss1, rss2, ports.c_str());
  std::fflush(stdout);
  for (std::string line; std::getline(std::cin, line);) {
    if (line == "measure") {
      // Its open fds too: two sockets a tunnel, and no pipe held by an idle one.
      const auto fds = std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                     std::filesystem::directory_iterator());
      std::printf("rss %ld conns %zu fds %ld\n", vmrss_kib(), relay->connections(),
                  static_cast<long>(fds));
      std::fflush(stdout);
    } else if (line == "quit") {
      break;
    }
  }
  return 0;
}

struct Child {
  pid_t pid = -1;
  FILE* to = nullptr;
  FILE* from = nullptr;
  std::string line() {
    char* buf = nullptr;
    std::size_t cap = 0;
    ssize_t n = ::getline(&buf, &cap, from);
    std::string out = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
    std::free(buf);
    if (out.empty()) die("the relay holder ended early");
    return out;
  }
  void say(const char* what) {
    std::fprintf(to, "%s\n", what);
    std::fflush(to);
  }
};

Child spawn_holder(int jails, std::uint16_t upstream_port) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {self, "--relay-holder", std::to_string(jails),
                                   std::to_string(upstream_port)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child c;
  if (int rc = posix_spawn(&c.pid, self.c_str(), &fa, nullptr, argv.data(), environ); rc != 0)
    die(std::string("spawn the relay holder: ") + std::strerror(rc));
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  c.to = ::fdopen(in[1], "w");
  c.from = ::fdopen(out[0], "r");
  return c;
}

void section_memory(const Options& o) {
  const int total = o.jails * o.per_jail;
  std::printf("\n== 3. memory: %d jails x %d idle CONNECT tunnels (%d tunnels)\n", o.jails,
              o.per_jail, total);
  Holder holder(o.holder_port);
  Path brig_path{"brig relay", 0, kUpstreamName, 0};

  Child child = spawn_holder(o.jails, holder.port());
  std::istringstream ready(child.line());
  std::string word;
  long rss0 = 0, rss1 = 0, rss2 = 0;
  ready >> word >> rss0 >> rss1 >> rss2;
  std::vector<std::uint16_t> ports;
  for (unsigned p; ready >> p;) ports.push_back(static_cast<std::uint16_t>(p));
  if (word != "ready" || static_cast<int>(ports.size()) != o.jails)
    die("the relay holder: bad hello");

  std::vector<UniqueFd> tunnels;
  tunnels.reserve(static_cast<std::size_t>(total));
  struct Reading {
    long rss = 0, fds = 0;
    std::size_t conns = 0;
  };
  auto measure = [&] {
    // Established: each tunnel has had its 200. Let the relay go idle first.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    child.say("measure");
    std::istringstream m(child.line());
    Reading r;
    m >> word >> r.rss >> word >> r.conns >> word >> r.fds;
    return r;
  };
  // The first jail's tunnels are read apart: the relay thread's first
  // allocations (its malloc arena, the pages of its scratch buffer) come
  // with them, a cost paid once, not per tunnel.
  Reading first, all;
  for (int j = 0; j < o.jails; ++j) {
    brig_path.proxy = ports[static_cast<std::size_t>(j)];
    for (int k = 0; k < o.per_jail; ++k) tunnels.push_back(open_tunnel(brig_path, holder.port()));
    if (j == 0) first = measure();
  }
  all = measure();
  const long rss3 = all.rss, fds = all.fds;
  const std::size_t conns = all.conns;
  std::printf("  brig's relay, in a process of its own (this program, --relay-holder), VmRSS:\n");
  auto row = [](const std::string& what, long kib, const std::string& per) {
    std::printf("    %-48s %+7ld KiB%s\n", what.c_str(), kib, per.c_str());
  };
  auto each = [](long kib, int n, const char* unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "   (%.2f KiB a %s)", static_cast<double>(kib) / n, unit);
    return std::string(buf);
  };
  std::printf("    %-48s %7ld KiB\n", "the process before the relay", rss0);
  row("relay started (thread, epoll, c-ares)", rss1 - rss0, "");
  row(std::to_string(o.jails) + " jails added (a proxy listener each)", rss2 - rss1,
      each(rss2 - rss1, o.jails, "jail"));
  row(std::to_string(first.conns) + " idle tunnels of the first jail (first use)", first.rss - rss2,
      each(first.rss - rss2, o.per_jail, "tunnel"));
  if (o.jails > 1)
    row(std::to_string(conns - first.conns) + " more idle tunnels (the other jails)",
        rss3 - first.rss, each(rss3 - first.rss, total - o.per_jail, "tunnel"));
  row(std::to_string(conns) + " idle tunnels open (connections()), in all", rss3 - rss2,
      each(rss3 - rss2, total, "tunnel"));
  std::printf("    total %ld KiB (%.2f MiB), %.2f MiB over the bare process; %ld fds open\n", rss3,
              rss3 / 1024.0, (rss3 - rss0) / 1024.0, fds);
  tunnels.clear();
  child.say("quit");
  brig::bench::finish(child.pid);
  std::fclose(child.to);
  std::fclose(child.from);
  holder.drop_all();

  // The peers, for scale: one listener each (no jails), the same count of
  // idle tunnels, VmRSS of their process.
  for (auto [name, port, pid] : {std::tuple{"tinyproxy", o.tinyproxy_port, o.tinyproxy_pid},
                                 std::tuple{"squid", o.squid_port, o.squid_pid}}) {
    if (!port || !pid) continue;
    Path p{name, port, "127.0.0.1", pid};
    const long before = vmrss_kib(std::to_string(pid));
    for (int i = 0; i < total; ++i) tunnels.push_back(open_tunnel(p, holder.port()));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const long after = vmrss_kib(std::to_string(pid));
    std::printf("  %-9s (pid %d) VmRSS %6ld KiB -> %6ld KiB: %+6ld KiB (%.2f KiB a tunnel)\n", name,
                static_cast<int>(pid), before, after, after - before,
                static_cast<double>(after - before) / total);
    tunnels.clear();
    holder.drop_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::printf(
      "  (VmRSS is user-space memory; each tunnel's two sockets also cost kernel memory, the\n"
      "   same for every proxy, which RSS does not show)\n");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    auto number = [&]() { return std::atoll(value().c_str()); };
    if (a == "--brig")
      o.brig = std::filesystem::absolute(value()).string();  // the jails run in a temp dir
    else if (a == "--only")
      o.only.push_back(value());
    else if (a == "--starts")
      o.starts = std::max(10, static_cast<int>(number()));
    else if (a == "--requests")
      o.requests = std::max(10, static_cast<int>(number()));
    else if (a == "--download-mib")
      o.download_mib = static_cast<std::uint64_t>(std::max(1LL, number()));
    else if (a == "--rounds")
      o.rounds = std::max(1, static_cast<int>(number()));
    else if (a == "--jails")
      o.jails = std::max(1, static_cast<int>(number()));
    else if (a == "--per-jail")
      o.per_jail = std::max(1, static_cast<int>(number()));
    else if (a == "--tinyproxy")
      o.tinyproxy_port = static_cast<std::uint16_t>(number());
    else if (a == "--tinyproxy-pid")
      o.tinyproxy_pid = static_cast<pid_t>(number());
    else if (a == "--squid")
      o.squid_port = static_cast<std::uint16_t>(number());
    else if (a == "--squid-pid")
      o.squid_pid = static_cast<pid_t>(number());
    else if (a == "--upstream-port")
      o.upstream_port = static_cast<std::uint16_t>(number());
    else if (a == "--holder-port")
      o.holder_port = static_cast<std::uint16_t>(number());
    else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: brig-egress-bench [--brig PATH] [--tinyproxy PORT --tinyproxy-pid PID]\n"
          "         [--squid PORT --squid-pid PID] [--only start|throughput|latency|memory]...\n"
          "         [--starts N] [--download-mib N] [--rounds N] [--requests N]\n"
          "         [--jails N] [--per-jail N] [--upstream-port P] [--holder-port P]\n");
      std::exit(0);
    } else {
      die("unknown option " + a + " (see --help)");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--relay-holder")
    return relay_holder(std::atoi(argv[2]), static_cast<std::uint16_t>(std::atoi(argv[3])));
  const Options o = parse(argc, argv);
  auto want = [&](const char* s) {
    return o.only.empty() || std::find(o.only.begin(), o.only.end(), s) != o.only.end();
  };
  raise_fd_limit();
  std::printf("brig-egress-bench: %u CPUs, load average %s; brig's relay runs in-process\n",
              std::thread::hardware_concurrency(), load_average().c_str());
  std::printf("  peers: tinyproxy %s, squid %s (forward proxies on 127.0.0.1)\n",
              o.tinyproxy_port ? ("port " + std::to_string(o.tinyproxy_port)).c_str() : "not run",
              o.squid_port ? ("port " + std::to_string(o.squid_port)).c_str() : "not run");
  std::fflush(stdout);

  if (want("start")) section_start(o);
  if (want("throughput") || want("latency")) {
    Upstream up(o.upstream_port);
    InProcessRelay relay(up.port());
    if (want("throughput")) section_throughput(o, up, relay);
    std::fflush(stdout);
    if (want("latency")) section_latency(o, up, relay);
  }
  std::fflush(stdout);
  if (want("memory")) section_memory(o);
  return 0;
}
