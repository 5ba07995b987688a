// brig-llm-bench: issue 14's benchmark of the LLM proxy (in-process, on
// loopback) against a direct connection and, when `nginx` is installed,
// nginx as a reverse proxy (proxy_buffering off) in front of the same
// upstream, all in one run:
//   ttfb        added time to first byte over keep-alive (p50, p99)
//   throughput  one SSE stream of --mib MiB (default 1024), MiB/s
//   concurrent  100 streams at once: p99 first byte, CPU and RSS of this
//               process (the upstream and clients are in it too: compare
//               the direct row)
// The upstream is a small threaded HTTP/1.1 server in this process. Not a
// test: numbers, not verdicts. Build the release preset for real numbers.
// Usage: brig-llm-bench [--mib N] [--requests N] [--only ttfb|throughput|concurrent]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "server/llm/placeholder.h"
#include "server/llm/proxy.h"
#include "tests/bench/bench_stats.h"
#include "tests/server/loopback.h"

namespace {

using brig::UniqueFd;
using brig::bench::Clock;
using brig::bench::ms_since;
using namespace std::chrono_literals;

using brig::testing::loopback::port_of;
using brig::testing::loopback::send_all;

UniqueFd listen_loopback(std::uint16_t port = 0) {
  return brig::testing::loopback::bound(SOCK_STREAM, port);
}

// Unbounded (no timeouts), without Nagle: the benchmark times each byte.
UniqueFd dial(std::uint16_t port) {
  UniqueFd fd = brig::testing::loopback::connect_to(port, std::chrono::milliseconds(0));
  int one = 1;
  if (fd) ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// The upstream: /ttfb answers "ok"; /stream/<bytes> sends that many bytes
// of SSE in 16 KiB chunks as fast as the reader takes them; /sse sends
// three events 50 ms apart.
class Upstream {
 public:
  Upstream() : listener_(listen_loopback()) {
    port_ = port_of(listener_.get());
    thread_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        std::thread([fd] { serve(fd); }).detach();
      }
    });
  }
  ~Upstream() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  static void serve(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::string in;
    char buf[8192];
    const std::string event = "data: " + std::string(16 * 1024 - 8, 'x') + "\n\n";
    const std::string chunk = fmt::format("{:x}\r\n{}\r\n", event.size(), event);
    for (;;) {
      std::size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
          ::close(fd);
          return;
        }
        in.append(buf, static_cast<std::size_t>(n));
      }
      const std::string line = in.substr(0, in.find("\r\n"));
      in.erase(0, end + 4);
      const std::string path =
          line.substr(line.find(' ') + 1, line.rfind(' ') - line.find(' ') - 1);
      bool ok = true;
      if (path.ends_with("/ttfb")) {
        ok = send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      } else if (const auto at = path.find("/stream/"); at != std::string::npos) {
        std::uint64_t left = std::stoull(path.substr(at + 8));
        ok = send_all(fd,
                      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n");
        for (; ok && left > 0; left -= std::min<std::uint64_t>(left, event.size()))
          ok = send_all(fd, chunk);
        ok = ok && send_all(fd, "0\r\n\r\n");
      } else {
        ok = send_all(fd,
                      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n5\r\nhi\n\n\r\n");
        for (int i = 0; ok && i < 2; ++i) {
          std::this_thread::sleep_for(50ms);
          ok = send_all(fd, "5\r\nhi\n\n\r\n");
        }
        ok = ok && send_all(fd, "0\r\n\r\n");
      }
      if (!ok) {
        ::close(fd);
        return;
      }
    }
  }
  UniqueFd listener_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// A peer to measure: where to connect, and the path prefix and headers.
struct Peer {
  std::string name;
  std::uint16_t port = 0;
  std::string prefix;   // "" direct, "/bench" through brig
  std::string headers;  // the placeholder for brig
};

std::string get(const Peer& p, const std::string& path) {
  return fmt::format("GET {}{} HTTP/1.1\r\nHost: 127.0.0.1\r\n{}\r\n", p.prefix, path, p.headers);
}

// Reads one response framed by Content-Length or chunked (ends at "0\r\n\r\n").
// Returns the bytes read and sets first to the time of the first byte.
std::uint64_t read_response(int fd, Clock::time_point& first) {
  std::string buf(256 * 1024, '\0');
  std::string tail;
  std::uint64_t total = 0;
  bool got_first = false;
  std::optional<std::uint64_t> length;
  std::uint64_t head = 0;
  std::string head_text;
  for (;;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) return total;
    if (!got_first) {
      first = Clock::now();
      got_first = true;
    }
    total += static_cast<std::uint64_t>(n);
    if (head == 0) {
      head_text.append(buf.data(), static_cast<std::size_t>(n));
      const auto end = head_text.find("\r\n\r\n");
      if (end != std::string::npos) {
        head = end + 4;
        if (const auto cl = head_text.find("Content-Length: "); cl != std::string::npos && cl < end)
          length = std::stoull(head_text.substr(cl + 16));
      }
    }
    if (length && head != 0 && total >= head + *length) return total;
    tail = (tail + std::string(buf.data(), static_cast<std::size_t>(n)));
    if (tail.size() > 16) tail.erase(0, tail.size() - 16);
    if (!length && head != 0 && tail.ends_with("0\r\n\r\n")) return total;
  }
}

void ttfb(const std::vector<Peer>& peers, int requests) {
  fmt::print("\nttfb: {} sequential GETs on one keep-alive connection (ms)\n", requests);
  std::optional<double> direct;
  for (const Peer& p : peers) {
    auto fd = dial(p.port);
    std::vector<double> v;
    for (int i = 0; i < requests; ++i) {
      const auto t0 = Clock::now();
      if (!send_all(fd.get(), get(p, "/ttfb"))) break;
      Clock::time_point first;
      if (read_response(fd.get(), first) == 0) break;
      v.push_back(std::chrono::duration<double, std::milli>(first - t0).count());
    }
    auto s = brig::bench::stats(v);
    std::sort(v.begin(), v.end());
    const double p99 = v.empty() ? 0 : v[v.size() * 99 / 100];
    if (!direct) direct = s.median;
    fmt::print("  {:<8} p50 {:.3f}  p99 {:.3f}  added p50 {:+.3f}  (n={})\n", p.name, s.median, p99,
               s.median - *direct, s.n);
  }
}

void throughput(const std::vector<Peer>& peers, std::uint64_t mib) {
  fmt::print("\nthroughput: one SSE stream of {} MiB (MiB/s)\n", mib);
  for (const Peer& p : peers) {
    auto fd = dial(p.port);
    const auto t0 = Clock::now();
    send_all(fd.get(), get(p, fmt::format("/stream/{}", mib * 1024 * 1024)));
    Clock::time_point first;
    const std::uint64_t bytes = read_response(fd.get(), first);
    const double s = ms_since(t0) / 1000;
    fmt::print("  {:<8} {:.0f} MiB/s  ({} bytes in {:.2f} s)\n", p.name,
               static_cast<double>(bytes) / (1024.0 * 1024.0) / s, bytes, s);
  }
}

long rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  return 0;
}

double cpu_s() {
  rusage r{};
  ::getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

void concurrent(const std::vector<Peer>& peers) {
  fmt::print(
      "\nconcurrent: 100 SSE streams at once (first byte ms; CPU s and RSS of this "
      "process)\n");
  for (const Peer& p : peers) {
    std::vector<double> firsts(100, 0);
    const double cpu0 = cpu_s();
    const long rss0 = rss_kib();
    std::atomic<long> rss_peak{rss0};
    std::vector<std::thread> clients;
    const auto t0 = Clock::now();
    for (int i = 0; i < 100; ++i) {
      clients.emplace_back([&, i] {
        auto fd = dial(p.port);
        const auto s = Clock::now();
        send_all(fd.get(), get(p, "/sse"));
        Clock::time_point first;
        read_response(fd.get(), first);
        firsts[static_cast<std::size_t>(i)] =
            std::chrono::duration<double, std::milli>(first - s).count();
        long now = rss_kib(), seen = rss_peak;
        while (now > seen && !rss_peak.compare_exchange_weak(seen, now)) {
        }
      });
    }
    for (auto& t : clients) t.join();
    std::sort(firsts.begin(), firsts.end());
    fmt::print("  {:<8} p50 {:.2f}  p99 {:.2f}  wall {:.0f} ms  CPU {:.3f} s  RSS +{} KiB\n",
               p.name, firsts[50], firsts[99], ms_since(t0), cpu_s() - cpu0, rss_peak - rss0);
  }
}

// nginx in front of the upstream, when installed: a private prefix, its
// pid killed at the end.
struct Nginx {
  pid_t pid = -1;
  std::uint16_t port = 0;
  std::string dir;
  ~Nginx() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
    if (!dir.empty()) std::system(("rm -rf " + dir).c_str());
  }
};

bool start_nginx(Nginx& n, std::uint16_t upstream) {
  const char* paths[] = {"/usr/sbin/nginx", "/usr/bin/nginx"};
  const char* bin = nullptr;
  for (const char* p : paths)
    if (::access(p, X_OK) == 0) bin = p;
  if (bin == nullptr) return false;
  char tmpl[] = "/tmp/brig-llm-bench-nginx.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return false;
  n.dir = tmpl;
  {
    auto probe = listen_loopback();
    n.port = port_of(probe.get());
  }
  std::ofstream(n.dir + "/nginx.conf") << fmt::format(
      "worker_processes 1;\npid {0}/nginx.pid;\nerror_log {0}/error.log;\n"
      "events {{ worker_connections 4096; }}\n"
      "http {{\n  access_log off;\n  client_body_temp_path {0}/body;\n"
      "  proxy_temp_path {0}/proxy;\n"
      "  upstream up {{ server 127.0.0.1:{1}; keepalive 64; }}\n"
      "  server {{\n    listen 127.0.0.1:{2};\n    location / {{\n"
      "      proxy_pass http://up;\n      proxy_http_version 1.1;\n"
      "      proxy_set_header Connection \"\";\n      proxy_buffering off;\n"
      "      proxy_set_header x-api-key real-key;\n    }}\n  }}\n}}\n",
      n.dir, upstream, n.port);
  n.pid = ::fork();
  if (n.pid == 0) {
    ::execl(bin, bin, "-p", n.dir.c_str(), "-c", (n.dir + "/nginx.conf").c_str(), "-g",
            "daemon off;", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 100; ++i) {
    if (dial(n.port)) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  std::uint64_t mib = 1024;
  int requests = 2000;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--mib") mib = std::stoull(argv[i + 1]);
    if (a == "--requests") requests = std::stoi(argv[i + 1]);
    if (a == "--only") only = argv[i + 1];
  }
  Upstream upstream;
  brig::policy::LlmRoute route;
  route.prefix = "bench";
  route.target = fmt::format("http://127.0.0.1:{}", upstream.port());
  route.header = "x-api-key";
  route.key_env = "K";
  route.key_variable = "KEY";
  route.base_url_variable = "URL";
  std::vector<brig::llm::Secret> keys;
  keys.push_back(*brig::llm::Secret::hold("real-key"));
  auto proxy = brig::llm::Proxy::start({route}, std::move(keys), {});
  if (!proxy) {
    fmt::print(stderr, "brig-llm-bench: {}\n", proxy.error().to_string());
    return 1;
  }
  const std::string placeholder = *brig::llm::new_placeholder();
  auto listener = listen_loopback();
  const std::uint16_t brig_port = port_of(listener.get());
  (*proxy)->add_jail("bench", placeholder, std::move(listener));

  std::vector<Peer> peers = {
      {"direct", upstream.port(), "", "x-api-key: real-key\r\n"},
      {"brig", brig_port, "/bench", fmt::format("x-api-key: {}\r\n", placeholder)},
  };
  Nginx nginx;
  if (start_nginx(nginx, upstream.port()))
    peers.push_back({"nginx", nginx.port, "", ""});
  else
    fmt::print("nginx: not installed (apt-get install nginx-light): its rows are left out\n");

  if (only.empty() || only == "ttfb") ttfb(peers, requests);
  if (only.empty() || only == "throughput") throughput(peers, mib);
  if (only.empty() || only == "concurrent") concurrent(peers);
  return 0;
}
