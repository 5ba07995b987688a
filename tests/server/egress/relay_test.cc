// The relay end to end, on loopback only: the test makes a jail's listeners
// itself (127.0.0.1, ephemeral ports), runs the upstreams (an HTTP server,
// an echo server, a fake name server for c-ares) in threads, and plays the
// jail as a client. Names map to 127.0.0.1 through the policy's `hosts`,
// which is what makes them allowed there; anything else resolving to
// loopback is DNS rebinding and refused.
#include "server/egress/relay.h"
#include "server/egress/pins.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "server/policy/net_rules.h"
#include "tests/server/loopback.h"

namespace brig::egress {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------ sockets

using testing::loopback::bound;
using testing::loopback::port_of;
using testing::loopback::send_all;
using testing::loopback::set_timeouts;

// The relay's tests wait 5 s at most for any answer.
UniqueFd connect_to(std::uint16_t port, int type = SOCK_STREAM) {
  return testing::loopback::connect_to(port, 5s, type);
}

std::string read_all(int fd, std::size_t limit = 1 << 20) {
  return testing::loopback::read_all(fd, limit);
}

// Reads exactly `n` bytes (fewer on EOF or timeout).
std::string read_n(int fd, std::size_t n) {
  std::string out;
  char buf[4096];
  while (out.size() < n) {
    ssize_t got = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
    if (got <= 0) break;
    out.append(buf, static_cast<std::size_t>(got));
  }
  return out;
}

// --------------------------------------------------------- upstreams

// Accepts on 127.0.0.1 and runs `handle` for each connection on its own
// thread; stop() joins them all.
class TcpServer {
 public:
  explicit TcpServer(std::function<void(int)> handle)
      : listener_(bound(SOCK_STREAM)), handle_(std::move(handle)) {
    port_ = port_of(listener_.get());
    thread_ = std::thread([this] { loop(); });
  }
  ~TcpServer() { stop(); }
  std::uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }
  void stop() {
    if (stop_.exchange(true)) return;
    thread_.join();
    for (auto& t : workers_) t.join();
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++accepted_;
      set_timeouts(fd, 3s);
      workers_.emplace_back([this, fd] {
        handle_(fd);
        ::close(fd);
      });
    }
  }

  UniqueFd listener_;
  std::function<void(int)> handle_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::vector<std::thread> workers_;
};

void echo(int fd) {
  char buf[16384];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0 || !send_all(fd, {buf, static_cast<std::size_t>(n)})) break;
  }
  ::shutdown(fd, SHUT_WR);
}

void discard(int fd) {
  char buf[65536];
  while (::recv(fd, buf, sizeof buf, 0) > 0) {
  }
}

// An HTTP/1.1 server that answers one request per connection and notes
// what it received, including anything after the first request.
struct HttpUpstream {
  std::mutex mutex;
  std::vector<std::string> requests;  // head and body of each first request
  std::string extra;                  // bytes after a first request
  TcpServer server{[this](int fd) { serve(fd); }};

  void serve(int fd) {
    std::string in;
    char buf[4096];
    std::size_t end = std::string::npos;
    std::size_t body = 0;
    bool chunked = false;
    while (end == std::string::npos || in.size() < end + body) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<std::size_t>(n));
      if (end == std::string::npos && (end = in.find("\r\n\r\n")) != std::string::npos) {
        end += 4;
        if (auto cl = in.find("Content-Length: "); cl != std::string::npos && cl < end)
          body = std::stoul(in.substr(cl + 16));
        chunked = in.find("chunked") < end;
      }
      if (chunked && end != std::string::npos) {
        auto last = in.find("0\r\n\r\n", end);
        body = last == std::string::npos ? in.size() + 1 - end : last + 5 - end;
      }
    }
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    // Left open on purpose (no Connection: close): a second request, if the
    // relay let one through, would arrive now.
    set_timeouts(fd, 300ms);
    std::string after = in.substr(end + body) + read_all(fd);
    std::lock_guard lock(mutex);
    requests.push_back(in.substr(0, end + body));
    extra += after;
  }
};

// A name server for c-ares: A and AAAA records by name; "never.test" is
// never answered; unknown names are NXDOMAIN.
class FakeDns {
 public:
  FakeDns() : fd_(bound(SOCK_DGRAM)) {
    port_ = port_of(fd_.get());
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeDns() {
    stop_ = true;
    thread_.join();
  }
  std::uint16_t port() const { return port_; }
  void add(const std::string& name, const std::string& address) {
    std::lock_guard lock(mutex_);
    records_[name].push_back(address);
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      std::uint8_t buf[1500];
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      ssize_t n =
          ::recvfrom(fd_.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&peer), &len);
      if (n < 12) continue;
      auto reply = answer({buf, static_cast<std::size_t>(n)});
      if (!reply.empty())
        ::sendto(fd_.get(), reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&peer), len);
    }
  }

  std::vector<std::uint8_t> answer(std::span<const std::uint8_t> q) {
    std::size_t at = 12;
    std::string name;
    while (at < q.size() && q[at] != 0) {
      std::size_t len = q[at];
      if (!name.empty()) name += '.';
      name.append(reinterpret_cast<const char*>(&q[at + 1]), len);
      at += len + 1;
    }
    at += 1;
    if (at + 4 > q.size() || name == "never.test") return {};
    std::uint16_t type = static_cast<std::uint16_t>(q[at] << 8 | q[at + 1]);
    at += 4;
    std::vector<std::string> found;
    bool known;
    {
      std::lock_guard lock(mutex_);
      auto it = records_.find(name);
      known = it != records_.end();
      if (known) found = it->second;
    }
    std::vector<std::uint8_t> out(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(at));
    out[2] = 0x81;
    out[3] = known ? 0x80 : 0x83;  // RA, NOERROR or NXDOMAIN
    out[6] = out[7] = out[8] = out[9] = out[10] = out[11] = 0;
    std::uint16_t count = 0;
    for (const auto& text : found) {
      std::uint8_t rdata[16];
      bool v6 = text.find(':') != std::string::npos;
      if ((type == 28) != v6 || (type != 1 && type != 28)) continue;
      ::inet_pton(v6 ? AF_INET6 : AF_INET, text.c_str(), rdata);
      std::uint8_t rr[] = {0xc0, 12, 0, static_cast<std::uint8_t>(type),       0, 1, 0, 0,
                           0,    60, 0, static_cast<std::uint8_t>(v6 ? 16 : 4)};
      out.insert(out.end(), std::begin(rr), std::end(rr));
      out.insert(out.end(), rdata, rdata + (v6 ? 16 : 4));
      ++count;
    }
    out[7] = static_cast<std::uint8_t>(count);
    return out;
  }

  UniqueFd fd_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, std::vector<std::string>> records_;
};

// ------------------------------------------------------------ DNS client

std::vector<std::uint8_t> dns_query_bytes(std::uint16_t id, const std::string& name,
                                          std::uint16_t type) {
  std::vector<std::uint8_t> q = {static_cast<std::uint8_t>(id >> 8),
                                 static_cast<std::uint8_t>(id),
                                 1,
                                 0,
                                 0,
                                 1,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0};
  std::size_t start = 0;
  while (start <= name.size()) {
    auto dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q.push_back(static_cast<std::uint8_t>(dot - start));
    q.insert(q.end(), name.begin() + static_cast<std::ptrdiff_t>(start),
             name.begin() + static_cast<std::ptrdiff_t>(dot));
    start = dot + 1;
  }
  q.push_back(0);
  for (std::uint8_t b :
       {std::uint8_t(type >> 8), std::uint8_t(type), std::uint8_t{0}, std::uint8_t{1}})
    q.push_back(b);
  return q;
}

struct DnsReply {
  bool ok = false;
  std::uint16_t id = 0;
  int rcode = -1;
  std::vector<std::string> addresses;
};

DnsReply parse_reply(std::span<const std::uint8_t> r) {
  DnsReply out;
  if (r.size() < 12) return out;
  out.ok = true;
  out.id = static_cast<std::uint16_t>(r[0] << 8 | r[1]);
  out.rcode = r[3] & 0xf;
  std::size_t at = 12;
  for (int q = 0; q < (r[4] << 8 | r[5]); ++q) {
    while (at < r.size() && r[at] != 0 && (r[at] & 0xc0) == 0) at += r[at] + 1;
    at += (at < r.size() && (r[at] & 0xc0)) ? 2 : 1;
    at += 4;
  }
  for (int a = 0; a < (r[6] << 8 | r[7]) && at < r.size(); ++a) {
    while (at < r.size() && r[at] != 0 && (r[at] & 0xc0) == 0) at += r[at] + 1;
    at += (at < r.size() && (r[at] & 0xc0)) ? 2 : 1;
    if (at + 10 > r.size()) break;
    std::uint16_t type = static_cast<std::uint16_t>(r[at] << 8 | r[at + 1]);
    std::size_t len = static_cast<std::size_t>(r[at + 8] << 8 | r[at + 9]);
    at += 10;
    if (at + len > r.size()) break;
    char text[INET6_ADDRSTRLEN] = {};
    if (type == 1 && len == 4) ::inet_ntop(AF_INET, &r[at], text, sizeof text);
    if (type == 28 && len == 16) ::inet_ntop(AF_INET6, &r[at], text, sizeof text);
    if (text[0]) out.addresses.emplace_back(text);
    at += len;
  }
  return out;
}

DnsReply ask_udp(std::uint16_t port, std::span<const std::uint8_t> query) {
  UniqueFd fd = connect_to(port, SOCK_DGRAM);
  ::send(fd.get(), query.data(), query.size(), 0);
  std::uint8_t buf[4096];
  ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
  if (n <= 0) return {};
  return parse_reply({buf, static_cast<std::size_t>(n)});
}

DnsReply ask_tcp(int fd, std::span<const std::uint8_t> query) {
  std::string framed{static_cast<char>(query.size() >> 8), static_cast<char>(query.size())};
  framed.append(query.begin(), query.end());
  if (!send_all(fd, framed)) return {};
  auto len = read_n(fd, 2);
  if (len.size() != 2) return {};
  auto body =
      read_n(fd, static_cast<std::uint8_t>(len[0]) << 8 | static_cast<std::uint8_t>(len[1]));
  return parse_reply({reinterpret_cast<const std::uint8_t*>(body.data()), body.size()});
}

// ---------------------------------------------------------------- fixture

policy::NetRule rule(const std::string& text) {
  auto r = policy::parse_net_rule(text);
  EXPECT_TRUE(r.has_value()) << text << ": " << (r ? "" : r.error().to_string());
  return r ? *r : policy::NetRule{};
}

struct TestJail {
  std::uint64_t id = 0;
  std::uint16_t proxy = 0;
  std::uint16_t dns = 0;  // the same port over UDP and TCP
};

class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dns_.add("pub.test", "93.184.216.34");
    dns_.add("pub.test", "2606:2800:220:1::1");
    dns_.add("rebind.test", "127.0.0.1");
    // A private address no rule names, then another loopback address that
    // a test may name: nothing here is ever sent beyond loopback.
    dns_.add("mixed.test", "10.0.0.1");
    dns_.add("mixed.test", "127.0.0.2");
    dns_.add("localhost", "127.0.0.1");
    options_.resolvers = {fmt::format("127.0.0.1:{}", dns_.port())};
    options_.audit = [this](const EgressRecord& r) {
      std::lock_guard lock(mutex_);
      records_.push_back(r);
      cv_.notify_all();
    };
  }

  void start() {
    auto relay = Relay::start(options_);
    ASSERT_TRUE(relay.has_value()) << relay.error().to_string();
    relay_ = std::move(*relay);
  }

  // The relay goes first: it reports the connections it closes to records_,
  // and the upstreams' threads wait for those connections to end.
  void TearDown() override { relay_.reset(); }

  // The policy of most tests: web.test and echo.test are the upstreams on
  // 127.0.0.1 (named in `hosts`), pub.test a public name.
  policy::NetRules rules() {
    policy::NetRules r;
    for (auto text :
         {fmt::format("web.test:{}", web_.server.port()), fmt::format("echo.test:{}", echo_.port()),
          fmt::format("sink.test:{}", sink_.port()), std::string("pub.test"),
          fmt::format("rebind.test:{}", echo_.port()), fmt::format("localhost:{}", echo_.port()),
          std::string("never.test"), std::string("nx.test"), std::string("*.evil.test"),
          std::string("mixed.test"), fmt::format("closed.test:{}", closed_port_)})
      r.allow.push_back(rule(text));
    r.deny.push_back(rule("*.evil.test"));
    for (auto name : {"web.test", "echo.test", "sink.test", "closed.test"})
      r.hosts.push_back({name, *policy::parse_address("127.0.0.1")});
    return r;
  }

  TestJail add_jail(const std::string& label, policy::NetRules r) {
    TestJail j;
    JailListeners l;
    l.proxy = bound(SOCK_STREAM | SOCK_NONBLOCK);
    j.proxy = port_of(l.proxy.get());
    // One port for DNS over both protocols, as on the jail's :53.
    for (int tries = 0; tries < 20 && !l.dns_tcp; ++tries) {
      l.dns_udp = bound(SOCK_DGRAM | SOCK_NONBLOCK);
      j.dns = port_of(l.dns_udp.get());
      l.dns_tcp = bound(SOCK_STREAM | SOCK_NONBLOCK, j.dns);
    }
    EXPECT_TRUE(l.dns_tcp);
    j.id = relay_->add_jail(label, std::move(r), std::move(l));
    return j;
  }

  // Waits for a record matching `pred`; bounded.
  std::optional<EgressRecord> record(const std::function<bool(const EgressRecord&)>& pred,
                                     std::chrono::milliseconds wait = 5s) {
    std::unique_lock lock(mutex_);
    std::optional<EgressRecord> found;
    cv_.wait_for(lock, wait, [&] {
      for (const auto& r : records_)
        if (pred(r)) found = r;
      return found.has_value();
    });
    return found;
  }

  std::optional<EgressRecord> record_for(const std::string& host) {
    return record([&](const EgressRecord& r) { return r.host == host; });
  }

  // Sends `request` to the jail's proxy and returns everything it answers.
  std::string exchange(const TestJail& j, std::string_view request) {
    UniqueFd fd = connect_to(j.proxy);
    if (!fd || !send_all(fd.get(), request)) return "";
    return read_all(fd.get());
  }

  // The upstream records a request only once its connection is over, which
  // may be after the relay's own record of it: waits (bounded) for `n`.
  bool web_requests(std::size_t n) {
    for (auto until = Clock::now() + 5s; Clock::now() < until; std::this_thread::sleep_for(5ms)) {
      std::lock_guard lock(web_.mutex);
      if (web_.requests.size() >= n) return true;
    }
    return false;
  }

  bool wait_connections(std::size_t n) {
    for (auto until = Clock::now() + 5s; Clock::now() < until; std::this_thread::sleep_for(10ms))
      if (relay_->connections() == n) return true;
    return false;
  }

  static std::uint16_t unused_port() {
    UniqueFd fd = bound(SOCK_STREAM);
    return port_of(fd.get());  // closed again: nothing listens there
  }

  FakeDns dns_;
  HttpUpstream web_;
  TcpServer echo_{echo};
  TcpServer sink_{discard};
  std::uint16_t closed_port_ = unused_port();
  RelayOptions options_;
  std::unique_ptr<Relay> relay_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<EgressRecord> records_;
};

std::string connect_head(const std::string& authority) {
  return fmt::format("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", authority);
}

constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";

// ---------------------------------------------------------------- the proxy

TEST_F(RelayTest, ConnectTunnelsBothWaysPassesHalfCloseAndAuditsBytes) {
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd fd = connect_to(j.proxy);
  auto target = fmt::format("echo.test:{}", echo_.port());
  // Bytes sent right behind the head belong to the tunnel.
  ASSERT_TRUE(send_all(fd.get(), connect_head(target) + "early"));
  EXPECT_EQ(read_n(fd.get(), kEstablished.size()), kEstablished);
  EXPECT_EQ(read_n(fd.get(), 5), "early");
  ASSERT_TRUE(send_all(fd.get(), "ping"));
  EXPECT_EQ(read_n(fd.get(), 4), "ping");
  ::shutdown(fd.get(), SHUT_WR);  // the echo server sees EOF, closes, and so do we
  EXPECT_EQ(read_all(fd.get()), "");
  auto r = record_for("echo.test");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->jail, "jail-a");
  EXPECT_EQ(r->kind, EgressRecord::Kind::connect);
  EXPECT_TRUE(r->allowed);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->port, echo_.port());
  EXPECT_EQ(r->address, "127.0.0.1");
  EXPECT_EQ(r->rule, target);
  EXPECT_EQ(r->bytes_up, 9u);
  EXPECT_EQ(r->bytes_down, 9u);
  EXPECT_TRUE(wait_connections(0));
}

TEST_F(RelayTest, ConnectCarriesAMegabyteEachWay) {
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd fd = connect_to(j.proxy);
  ASSERT_TRUE(send_all(fd.get(), connect_head(fmt::format("echo.test:{}", echo_.port()))));
  ASSERT_EQ(read_n(fd.get(), kEstablished.size()), kEstablished);
  std::string data(1 << 20, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + i / 251);
  std::thread writer([&] {
    send_all(fd.get(), data);
    ::shutdown(fd.get(), SHUT_WR);
  });
  std::string back = read_all(fd.get(), data.size() + 1);
  writer.join();
  EXPECT_TRUE(back == data) << back.size();
  auto r = record_for("echo.test");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bytes_up, data.size());
  EXPECT_EQ(r->bytes_down, data.size());
}

TEST_F(RelayTest, PlainGetIsRewrittenAndItsResponseReturns) {
  start();
  auto j = add_jail("jail-a", rules());
  auto url = fmt::format("http://web.test:{}/path?q=1", web_.server.port());
  auto answer = exchange(j, fmt::format("GET {} HTTP/1.1\r\nHost: web.test:{}\r\nProxy-Connection: "
                                        "keep-alive\r\n\r\n",
                                        url, web_.server.port()));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_TRUE(answer.ends_with("\r\n\r\nhello")) << answer;
  auto r = record_for("web.test");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, EgressRecord::Kind::http);
  EXPECT_TRUE(r->allowed);
  EXPECT_EQ(r->status, 200);
  EXPECT_GT(r->bytes_up, 0u);
  EXPECT_EQ(r->bytes_down, answer.size());
  ASSERT_TRUE(web_requests(1));
  std::lock_guard lock(web_.mutex);
  ASSERT_EQ(web_.requests.size(), 1u);
  EXPECT_TRUE(web_.requests[0].starts_with("GET /path?q=1 HTTP/1.1\r\n")) << web_.requests[0];
  EXPECT_EQ(web_.requests[0].find("Proxy-Connection"), std::string::npos);
}

TEST_F(RelayTest, ASecondPipelinedRequestNeverReachesTheUpstream) {
  start();
  auto j = add_jail("jail-a", rules());
  auto port = web_.server.port();
  // A body framed by Content-Length, then a request for a name the policy
  // never allowed, smuggled behind it on the same connection.
  auto first = fmt::format(
      "POST http://web.test:{0}/a HTTP/1.1\r\nHost: web.test:{0}\r\nContent-Length: 4\r\n\r\nbody",
      port);
  auto second = "GET http://other.test/secret HTTP/1.1\r\nHost: other.test\r\n\r\n";
  auto answer = exchange(j, first + second);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_EQ(answer.find("HTTP/1.1", 1), std::string::npos) << "one response only: " << answer;
  std::this_thread::sleep_for(400ms);  // the upstream listens 300 ms for more
  ASSERT_TRUE(web_requests(1));
  std::lock_guard lock(web_.mutex);
  ASSERT_EQ(web_.requests.size(), 1u);
  EXPECT_TRUE(web_.requests[0].ends_with("\r\n\r\nbody")) << web_.requests[0];
  EXPECT_EQ(web_.extra, "");
}

TEST_F(RelayTest, AChunkedBodyIsRelayedToItsEndAndNoFurther) {
  start();
  auto j = add_jail("jail-a", rules());
  auto port = web_.server.port();
  auto request = fmt::format(
      "POST http://web.test:{0}/c HTTP/1.1\r\nHost: web.test:{0}\r\nTransfer-Encoding: "
      "chunked\r\n\r\n",
      port);
  UniqueFd fd = connect_to(j.proxy);
  ASSERT_TRUE(send_all(fd.get(), request));
  std::this_thread::sleep_for(50ms);  // the body in a later read than the head
  ASSERT_TRUE(send_all(fd.get(), "3\r\nabc\r\n0\r\n\r\nGET /x HTTP/1.1\r\n\r\n"));
  auto answer = read_all(fd.get());
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  std::this_thread::sleep_for(400ms);
  ASSERT_TRUE(web_requests(1));
  std::lock_guard lock(web_.mutex);
  ASSERT_EQ(web_.requests.size(), 1u);
  EXPECT_TRUE(web_.requests[0].ends_with("\r\n\r\n3\r\nabc\r\n0\r\n\r\n")) << web_.requests[0];
  EXPECT_EQ(web_.extra, "");
}

TEST_F(RelayTest, AHeadSentAByteAtATimeIsServed) {
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd fd = connect_to(j.proxy);
  for (char ch : connect_head(fmt::format("echo.test:{}", echo_.port()))) {
    ASSERT_TRUE(send_all(fd.get(), {&ch, 1}));
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(read_n(fd.get(), kEstablished.size()), kEstablished);
}

TEST_F(RelayTest, AnIdleTunnelIsClosedAfterTheIdleTimeout) {
  options_.idle_timeout = 300ms;
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd fd = connect_to(j.proxy);
  ASSERT_TRUE(send_all(fd.get(), connect_head(fmt::format("echo.test:{}", echo_.port()))));
  ASSERT_EQ(read_n(fd.get(), kEstablished.size()), kEstablished);
  // Traffic keeps it open past one timeout...
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(send_all(fd.get(), "x"));
    ASSERT_EQ(read_n(fd.get(), 1), "x");
  }
  // ...silence ends it.
  auto started = Clock::now();
  EXPECT_EQ(read_all(fd.get()), "");
  EXPECT_LT(Clock::now() - started, 3s);
  auto r = record_for("echo.test");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->bytes_up, 4u);
  EXPECT_TRUE(wait_connections(0));
}

TEST_F(RelayTest, AHeadRequestsResponseEndsAtItsHead) {
  start();
  auto j = add_jail("jail-a", rules());
  // The test upstream answers HEAD as it answers GET, body included: the
  // relay passes the head only (a HEAD response has no body) and closes.
  auto answer =
      exchange(j, fmt::format("HEAD http://web.test:{0}/ HTTP/1.1\r\nHost: web.test:{0}\r\n\r\n",
                              web_.server.port()));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_TRUE(answer.ends_with("\r\n\r\n")) << answer;
}

TEST_F(RelayTest, ADeniedNameIsRefusedNamingTheDenyRule) {
  start();
  auto j = add_jail("jail-a", rules());
  auto answer = exchange(j, connect_head("x.evil.test:443"));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403")) << answer;
  EXPECT_NE(answer.find("*.evil.test"), std::string::npos) << answer;
  auto r = record_for("x.evil.test");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->allowed);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(r->rule, "*.evil.test");
}

TEST_F(RelayTest, AnUnallowedNameIsRefusedWithThePolicyLineThatWouldAllowIt) {
  start();
  auto j = add_jail("jail-a", rules());
  auto answer = exchange(j, connect_head("other.test:443"));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403")) << answer;
  EXPECT_NE(answer.find(policy::allow_hint("other.test", 443)), std::string::npos) << answer;
  auto r = record_for("other.test");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->allowed);
}

TEST_F(RelayTest, AnotherPortOfAnAllowedHostIsRefused) {
  start();
  auto j = add_jail("jail-a", rules());
  auto answer = exchange(j, connect_head("echo.test:22"));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403")) << answer;
  EXPECT_NE(answer.find(policy::allow_hint("echo.test", 22)), std::string::npos) << answer;
}

TEST_F(RelayTest, AnAllowedPortNobodyListensOnIs502) {
  start();
  auto j = add_jail("jail-a", rules());
  auto answer = exchange(j, connect_head(fmt::format("closed.test:{}", closed_port_)));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 502")) << answer;
  EXPECT_NE(answer.find("refused"), std::string::npos) << answer;
  auto r = record_for("closed.test");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->allowed);
  EXPECT_EQ(r->status, 502);
}

TEST_F(RelayTest, ALoopbackLiteralThePolicyDoesNotNameIsRefused) {
  start();
  auto j = add_jail("jail-a", rules());
  auto answer = exchange(j, connect_head(fmt::format("127.0.0.1:{}", echo_.port())));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403")) << answer;
  auto plain =
      exchange(j, fmt::format("GET http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n", web_.server.port()));
  EXPECT_TRUE(plain.starts_with("HTTP/1.1 403")) << plain;
  EXPECT_EQ(echo_.accepted(), 0);
  EXPECT_EQ(web_.server.accepted(), 0);
}

TEST_F(RelayTest, ANameResolvingToLoopbackIsRefusedAsRebinding) {
  start();
  auto j = add_jail("jail-a", rules());
  for (std::string name : {"rebind.test", "localhost"}) {
    auto answer = exchange(j, connect_head(fmt::format("{}:{}", name, echo_.port())));
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 403")) << name << ": " << answer;
    EXPECT_NE(answer.find("127.0.0.1 (loopback)"), std::string::npos) << answer;
    auto r = record_for(name);
    ASSERT_TRUE(r) << name;
    EXPECT_FALSE(r->allowed);
  }
  EXPECT_EQ(echo_.accepted(), 0);
}

TEST_F(RelayTest, AnOversizeHeadIs431) {
  options_.max_head = 1024;
  start();
  auto j = add_jail("jail-a", rules());
  auto answer = exchange(j, "CONNECT echo.test:1 HTTP/1.1\r\nX: " + std::string(2000, 'a'));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 431")) << answer;
}

TEST_F(RelayTest, ASlowHeadIs408) {
  options_.head_timeout = 200ms;
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd fd = connect_to(j.proxy);
  ASSERT_TRUE(send_all(fd.get(), "CONNECT echo.te"));
  auto started = Clock::now();
  auto answer = read_all(fd.get());
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 408")) << answer;
  EXPECT_LT(Clock::now() - started, 3s);
  EXPECT_TRUE(wait_connections(0));
}

TEST_F(RelayTest, MalformedAndOriginFormRequestsAre400) {
  start();
  auto j = add_jail("jail-a", rules());
  auto bad = exchange(j, "NOT HTTP AT ALL\r\n\r\n");
  EXPECT_TRUE(bad.starts_with("HTTP/1.1 400")) << bad;
  auto origin = exchange(j, "GET / HTTP/1.1\r\nHost: web.test\r\n\r\n");
  EXPECT_TRUE(origin.starts_with("HTTP/1.1 400")) << origin;
}

TEST_F(RelayTest, ASilentNameServerIs504AfterTheConnectTimeout) {
  options_.connect_timeout = 300ms;
  start();
  auto j = add_jail("jail-a", rules());
  auto started = Clock::now();
  auto answer = exchange(j, connect_head("never.test:443"));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 504")) << answer;
  EXPECT_LT(Clock::now() - started, 3s);
  auto r = record_for("never.test");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 504);
}

TEST_F(RelayTest, ANamedAddressIsTriedAfterTheRebindingOnesAreDropped) {
  // 127.0.0.2: loopback, but not the address of the other tests' upstreams.
  UniqueFd upstream(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in at = testing::loopback::address(0);
  at.sin_addr.s_addr = htonl(0x7f000002);
  ASSERT_EQ(::bind(upstream.get(), reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(::listen(upstream.get(), 4), 0);
  socklen_t len = sizeof at;
  ::getsockname(upstream.get(), reinterpret_cast<sockaddr*>(&at), &len);
  const std::uint16_t port = ntohs(at.sin_port);
  start();
  policy::NetRules r = rules();
  r.allow.push_back(rule(fmt::format("mixed.test:{}", port)));
  r.allow.push_back(rule(fmt::format("127.0.0.2:{}", port)));
  auto j = add_jail("jail-a", r);
  // mixed.test resolves to 10.0.0.1 (private, not named: dropped unsent)
  // and 127.0.0.2, which the policy names on this port: the tunnel opens
  // there (the kernel completes the connection before any accept).
  auto answer = exchange(j, connect_head(fmt::format("mixed.test:{}", port)));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  // Without the naming rule both are refused, as rebinding.
  auto k = add_jail("jail-b", rules());
  auto refused = exchange(k, connect_head("mixed.test:443"));
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 403")) << refused;
  EXPECT_NE(refused.find("10.0.0.1 (private)"), std::string::npos) << refused;
}

TEST_F(RelayTest, ConnectionsOverTheJailsCapAre503) {
  options_.max_connections_per_jail = 2;
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd a = connect_to(j.proxy);
  UniqueFd b = connect_to(j.proxy);
  ASSERT_TRUE(wait_connections(2));
  UniqueFd c = connect_to(j.proxy);
  auto answer = read_all(c.get());
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 503")) << answer;
  auto r = record([](const EgressRecord& r) { return r.status == 503; });
  ASSERT_TRUE(r);
  EXPECT_EQ(relay_->connections(), 2u);
  a.reset();
  ASSERT_TRUE(wait_connections(1));
  auto ok = exchange(j, connect_head("other.test:443"));
  EXPECT_TRUE(ok.starts_with("HTTP/1.1 403")) << "served again under the cap: " << ok;
}

TEST_F(RelayTest, ConnectionsOverTheRelaysCapAre503WhateverTheJail) {
  options_.max_connections = 2;
  start();
  auto a = add_jail("jail-a", rules());
  auto b = add_jail("jail-b", rules());
  UniqueFd one = connect_to(a.proxy);
  UniqueFd two = connect_to(b.proxy);
  ASSERT_TRUE(wait_connections(2));
  auto answer = exchange(a, connect_head("other.test:443"));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 503")) << answer;
  UniqueFd dns = connect_to(b.dns);  // DNS over TCP past the cap: closed
  char c;
  EXPECT_LE(::recv(dns.get(), &c, 1, 0), 0);
  auto r = record([](const EgressRecord& r) {
    return r.status == 503 && r.rule.starts_with("max_connections (");
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->jail, "jail-a");
  EXPECT_EQ(relay_->connections(), 2u);
  two.reset();
  ASSERT_TRUE(wait_connections(1));
  auto ok = exchange(b, connect_head("other.test:443"));
  EXPECT_TRUE(ok.starts_with("HTTP/1.1 403")) << "served again under the cap: " << ok;
}

TEST_F(RelayTest, RemoveJailClosesItsTunnelsAndConnections) {
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd fd = connect_to(j.proxy);
  ASSERT_TRUE(send_all(fd.get(), connect_head(fmt::format("echo.test:{}", echo_.port()))));
  ASSERT_EQ(read_n(fd.get(), kEstablished.size()), kEstablished);
  UniqueFd idle = connect_to(j.proxy);  // in its head
  ASSERT_TRUE(wait_connections(2));
  relay_->remove_jail(j.id);
  EXPECT_EQ(relay_->connections(), 0u);  // remove_jail returned: all closed
  char c;
  EXPECT_LE(::recv(fd.get(), &c, 1, 0), 0);
  EXPECT_LE(::recv(idle.get(), &c, 1, 0), 0);
  auto r = record_for("echo.test");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  relay_->remove_jail(j.id);  // unknown now: ignored
}

TEST_F(RelayTest, AnotherJailIsServedWhileOneFloods) {
  options_.max_connections_per_jail = 8;
  start();
  auto flood = add_jail("flood", rules());
  auto calm = add_jail("calm", rules());
  std::atomic<bool> stop{false};
  std::vector<std::thread> flooders;
  // Joined however the test ends (an ASSERT returns early).
  struct Join {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Join() {
      stop = true;
      for (auto& t : threads) t.join();
    }
  } join{stop, flooders};
  for (int i = 0; i < 4; ++i) {
    flooders.emplace_back([&] {
      UniqueFd fd = connect_to(flood.proxy);
      if (!send_all(fd.get(), connect_head(fmt::format("sink.test:{}", sink_.port())))) return;
      read_n(fd.get(), kEstablished.size());
      std::string chunk(64 * 1024, 'x');
      for (auto until = Clock::now() + 3s; !stop && Clock::now() < until;)
        if (!send_all(fd.get(), chunk)) break;
    });
  }
  flooders.emplace_back([&] {  // and connections past its cap
    for (int i = 0; i < 500 && !stop; ++i) {
      connect_to(flood.proxy);
      std::this_thread::sleep_for(2ms);
    }
  });
  std::this_thread::sleep_for(200ms);
  for (int i = 0; i < 10; ++i) {
    auto started = Clock::now();
    UniqueFd fd = connect_to(calm.proxy);
    ASSERT_TRUE(send_all(fd.get(), connect_head(fmt::format("echo.test:{}", echo_.port()))));
    ASSERT_EQ(read_n(fd.get(), kEstablished.size()), kEstablished);
    ASSERT_TRUE(send_all(fd.get(), "ping"));
    ASSERT_EQ(read_n(fd.get(), 4), "ping");
    EXPECT_LT(Clock::now() - started, 2s) << "round " << i;
  }
}

// ------------------------------------------------------------- the DNS stub

TEST_F(RelayTest, DnsOverUdpAnswersAllowedNamesAndRefusesTheRest) {
  start();
  auto j = add_jail("jail-a", rules());
  auto a = ask_udp(j.dns, dns_query_bytes(1, "pub.test", 1));
  EXPECT_EQ(a.id, 1);
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.addresses, std::vector<std::string>{"93.184.216.34"});
  auto aaaa = ask_udp(j.dns, dns_query_bytes(2, "pub.test", 28));
  EXPECT_EQ(aaaa.rcode, 0);
  EXPECT_EQ(aaaa.addresses, std::vector<std::string>{"2606:2800:220:1::1"});
  auto hosts = ask_udp(j.dns, dns_query_bytes(3, "web.test", 1));
  EXPECT_EQ(hosts.addresses, std::vector<std::string>{"127.0.0.1"});
  auto refused = ask_udp(j.dns, dns_query_bytes(4, "other.test", 1));
  EXPECT_EQ(refused.rcode, 5);
  auto denied = ask_udp(j.dns, dns_query_bytes(5, "x.evil.test", 1));
  EXPECT_EQ(denied.rcode, 5);
  auto nx = ask_udp(j.dns, dns_query_bytes(6, "nx.test", 1));
  EXPECT_EQ(nx.rcode, 3);
  auto txt = ask_udp(j.dns, dns_query_bytes(7, "pub.test", 16));
  EXPECT_EQ(txt.rcode, 0);
  EXPECT_TRUE(txt.addresses.empty());
  // Rebinding: an allowed name whose only address is loopback gets none.
  auto rebind = ask_udp(j.dns, dns_query_bytes(8, "rebind.test", 1));
  EXPECT_EQ(rebind.rcode, 0);
  EXPECT_TRUE(rebind.addresses.empty());
  // Neither of mixed.test's addresses is named on its ports: none answered.
  auto mixed = ask_udp(j.dns, dns_query_bytes(9, "mixed.test", 1));
  EXPECT_EQ(mixed.rcode, 0);
  EXPECT_TRUE(mixed.addresses.empty());
  auto r = record([](const EgressRecord& r) {
    return r.kind == EgressRecord::Kind::dns && r.host == "pub.test" &&
           r.address == "93.184.216.34";
  });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->allowed);
  auto rr = record_for("other.test");
  ASSERT_TRUE(rr);
  EXPECT_FALSE(rr->allowed);
  EXPECT_EQ(rr->status, 5);
}

// filtered mode: a name pinned when the jail started is answered with the
// pinned addresses alone (what its kernel rules let through), not with what
// it resolves to now.
TEST_F(RelayTest, APinnedNameIsAnsweredWithItsPinsAlone) {
  start();
  policy::NetRules r = rules();
  r.pinned.push_back({"pub.test", *policy::parse_address("151.101.0.223")});
  auto j = add_jail("jail-pinned", std::move(r));
  auto a = ask_udp(j.dns, dns_query_bytes(1, "pub.test", 1));
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.addresses, std::vector<std::string>{"151.101.0.223"});
  // A hosts entry still wins over a pin of the same name.
  policy::NetRules both = rules();
  both.pinned.push_back({"web.test", *policy::parse_address("151.101.0.223")});
  auto k = add_jail("jail-hosts", std::move(both));
  EXPECT_EQ(ask_udp(k.dns, dns_query_bytes(2, "web.test", 1)).addresses,
            std::vector<std::string>{"127.0.0.1"});
}

TEST_F(RelayTest, PinsResolveIpv4AndSayWhyANameDidNot) {
  auto pins = resolve_pins({"pub.test", "nx.test", "never.test"}, options_.resolvers, 3s);
  ASSERT_TRUE(pins) << pins.error().to_string();
  EXPECT_EQ(
      pins->resolved,
      (std::vector<policy::StaticHost>{{"pub.test", *policy::parse_address("93.184.216.34")}}));
  ASSERT_EQ(pins->unresolved.size(), 2u);
  EXPECT_EQ(pins->unresolved[0], "nx.test: does not exist");
  EXPECT_EQ(pins->unresolved[1], "never.test: no answer in time");
  auto none = resolve_pins({}, options_.resolvers, 1s);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->resolved.empty());
}

TEST_F(RelayTest, DnsOverUdpAnswersMalformedQueriesWithFormerr) {
  start();
  auto j = add_jail("jail-a", rules());
  std::vector<std::uint8_t> garbage = {0x12, 0x34, 1, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  auto bad = ask_udp(j.dns, garbage);
  EXPECT_EQ(bad.id, 0x1234);
  EXPECT_EQ(bad.rcode, 1);
  // Over 512 bytes without EDNS.
  auto big = dns_query_bytes(0x4321, "pub.test", 1);
  big.resize(600, 0);
  auto large = ask_udp(j.dns, big);
  EXPECT_EQ(large.id, 0x4321);
  EXPECT_EQ(large.rcode, 1);
  // Still serving.
  EXPECT_EQ(ask_udp(j.dns, dns_query_bytes(1, "web.test", 1)).rcode, 0);
}

TEST_F(RelayTest, DnsOverTcpAnswersSeveralQueriesOnOneConnection) {
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd fd = connect_to(j.dns);
  ASSERT_TRUE(fd);
  auto a = ask_tcp(fd.get(), dns_query_bytes(1, "pub.test", 1));
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.addresses, std::vector<std::string>{"93.184.216.34"});
  auto aaaa = ask_tcp(fd.get(), dns_query_bytes(2, "pub.test", 28));
  EXPECT_EQ(aaaa.addresses, std::vector<std::string>{"2606:2800:220:1::1"});
  auto refused = ask_tcp(fd.get(), dns_query_bytes(3, "other.test", 1));
  EXPECT_EQ(refused.rcode, 5);
  std::vector<std::uint8_t> garbage = {0x12, 0x34, 1, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0xff};
  auto bad = ask_tcp(fd.get(), garbage);
  EXPECT_EQ(bad.id, 0x1234);
  EXPECT_EQ(bad.rcode, 1);
  auto hosts = ask_tcp(fd.get(), dns_query_bytes(4, "web.test", 1));
  EXPECT_EQ(hosts.addresses, std::vector<std::string>{"127.0.0.1"});
}

// Thousands of queries pipelined on one connection: each is answered in
// turn, none on the stack of the one before (that overflowed it), and
// another jail is served meanwhile.
TEST_F(RelayTest, AStreamOfDnsOverTcpQueriesNeitherOverflowsTheStackNorStarvesOthers) {
  options_.audit = nullptr;  // 50,000 records are not the point here
  start();
  auto flood = add_jail("flood", rules());
  auto calm = add_jail("calm", rules());
  UniqueFd fd = connect_to(flood.dns);
  ASSERT_TRUE(fd);
  set_timeouts(fd.get(), 20s);
  constexpr int kQueries = 50'000;
  std::string stream;
  for (int i = 0; i < kQueries; ++i) {
    auto q = dns_query_bytes(static_cast<std::uint16_t>(i), "other.test", 1);
    stream.push_back(static_cast<char>(q.size() >> 8));
    stream.push_back(static_cast<char>(q.size()));
    stream.append(q.begin(), q.end());
  }
  std::thread writer([&] { send_all(fd.get(), stream); });
  int answered = 0;
  int calm_rcode = -1;
  for (; answered < kQueries; ++answered) {
    auto len = read_n(fd.get(), 2);
    if (len.size() != 2) break;
    auto body = read_n(fd.get(),
                       static_cast<std::uint8_t>(len[0]) << 8 | static_cast<std::uint8_t>(len[1]));
    auto reply = parse_reply({reinterpret_cast<const std::uint8_t*>(body.data()), body.size()});
    if (reply.rcode != 5 || reply.id != static_cast<std::uint16_t>(answered)) break;
    if (answered == 1000) calm_rcode = ask_udp(calm.dns, dns_query_bytes(7, "web.test", 1)).rcode;
  }
  ::shutdown(fd.get(), SHUT_RDWR);
  writer.join();
  EXPECT_EQ(answered, kQueries);
  EXPECT_EQ(calm_rcode, 0) << "the other jail was not answered during the stream";
}

TEST_F(RelayTest, AnAbsentResolverIsServfail) {
  UniqueFd silent = bound(SOCK_DGRAM);  // bound, never read: c-ares times out
  std::uint16_t port = port_of(silent.get());
  options_.resolvers = {fmt::format("127.0.0.1:{}", port)};
  start();
  auto j = add_jail("jail-a", rules());
  UniqueFd fd = connect_to(j.dns, SOCK_DGRAM);
  set_timeouts(fd.get(), 15s);
  auto q = dns_query_bytes(9, "pub.test", 1);
  ::send(fd.get(), q.data(), q.size(), 0);
  std::uint8_t buf[512];
  ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(parse_reply({buf, static_cast<std::size_t>(n)}).rcode, 2);
}

// ---------------------------------------------------------- the audit

TEST_F(RelayTest, RefusalRecordsAreRateLimitedPerJailAndSummarized) {
  options_.max_refusal_records_per_second = 5;
  start();
  auto j = add_jail("noisy", rules());
  auto quiet = add_jail("quiet", rules());
  UniqueFd fd = connect_to(j.dns, SOCK_DGRAM);
  auto ask = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto q = dns_query_bytes(static_cast<std::uint16_t>(i), "other.test", 1);
      ::send(fd.get(), q.data(), q.size(), 0);
      std::uint8_t buf[512];
      ASSERT_GT(::recv(fd.get(), buf, sizeof buf, 0), 0);  // answered all the same
    }
  };
  ask(200);
  // An allowed connection is recorded however many refusals came before.
  UniqueFd tunnel = connect_to(j.proxy);
  ASSERT_TRUE(send_all(tunnel.get(), connect_head(fmt::format("echo.test:{}", echo_.port()))));
  ASSERT_EQ(read_n(tunnel.get(), kEstablished.size()), kEstablished);
  tunnel.reset();
  ASSERT_TRUE(record_for("echo.test"));
  // Another jail's refusals have their own budget.
  EXPECT_EQ(ask_udp(quiet.dns, dns_query_bytes(1, "quiet-other.test", 1)).rcode, 5);
  EXPECT_TRUE(record_for("quiet-other.test"));
  // The summary comes once the window has passed, with no further refusal.
  ASSERT_TRUE(record([](const EgressRecord& r) {
    return r.jail == "noisy" && r.rule.find("suppressed") != std::string::npos;
  }));
  ask(20);
  relay_->remove_jail(j.id);  // says what it suppressed before it returns
  std::lock_guard lock(mutex_);
  std::size_t single = 0;
  std::size_t suppressed = 0;
  for (const auto& r : records_) {
    if (r.jail != "noisy") continue;
    if (r.host == "other.test") ++single;
    if (r.rule.find("suppressed") != std::string::npos) suppressed += std::stoul(r.rule);
  }
  EXPECT_LT(single, 50u);
  EXPECT_EQ(single + suppressed, 220u);
}

TEST(DescribeTest, EscapesEverythingOutsidePrintableAscii) {
  EgressRecord r;
  r.kind = EgressRecord::Kind::dns;
  r.host = "a\nb\x1b[2J.test";
  r.rule = "back\\slash \x7f";
  r.address = "\xc3\xa9";
  auto text = describe(r);
  EXPECT_EQ(text, "refused DNS a\\x0ab\\x1b[2J.test: back\\x5cslash \\x7f -> \\xc3\\xa9");
  for (char c : text) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << text;
}

// --------------------------------------------------------- fd exhaustion

// In a child (its fd limit lowered for good): the relay with its fd table
// full. Returns 0, or what went wrong.
int full_fd_table_child() {
  rlimit lim{128, 128};
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return 2;
  RelayOptions options;
  options.resolvers = {"127.0.0.1:9"};
  options.max_connections = 1000;  // the fd table, not the cap, is what runs out here
  auto relay = Relay::start(options);
  if (!relay) return 2;
  JailListeners l;
  l.proxy = bound(SOCK_STREAM | SOCK_NONBLOCK);
  std::uint16_t port = port_of(l.proxy.get());
  (*relay)->add_jail("jail", policy::NetRules{}, std::move(l));
  std::this_thread::sleep_for(100ms);
  std::vector<UniqueFd> filler;
  for (UniqueFd f; (f = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)));)
    filler.push_back(std::move(f));
  if (filler.empty()) return 2;
  filler.pop_back();  // room for the client's socket; then none for the relay's accept
  UniqueFd client = connect_to(port);
  if (!client || !send_all(client.get(), connect_head("other.test:443"))) return 2;
  std::this_thread::sleep_for(200ms);
  auto cpu = [] {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  };
  auto before = cpu();
  std::this_thread::sleep_for(1s);
  if (cpu() - before > 300ms) return 3;
  filler.clear();  // fds again: the pending connection is served
  auto answer = read_all(client.get());
  return answer.starts_with("HTTP/1.1 403") ? 0 : 4;
}

TEST(RelayFdExhaustionTest, AFullFdTableLetsTheLoopSleepAndServesOnceFdsAreBack) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(full_fd_table_child());
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "2: setup failed, 3: the loop spun (over 300 ms CPU in an idle second), 4: not served "
         "once fds were back";
}

TEST(RelayOptionsTest, BadResolversAreRefusedAtStart) {
  RelayOptions options;
  options.resolvers = {"not an address"};
  EXPECT_FALSE(Relay::start(options).has_value());
}

}  // namespace
}  // namespace brig::egress
