// The LLM proxy end to end, on loopback only: the test makes a jail's
// listener itself (127.0.0.1, an ephemeral port), runs a fake provider
// (HTTP, and HTTPS with a CA made at run time), and plays the jail's code
// as a client speaking raw HTTP/1.1.
#include "server/llm/proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "server/llm/placeholder.h"
#include "tests/server/llm/fake_upstream.h"
#include "tests/server/loopback.h"

namespace brig::llm {
namespace {

using namespace std::chrono_literals;
using testing::FakeUpstream;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TestPki;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kRealKey = "sk-REAL-7f3a9c0e5b1d4e2f";

using brig::testing::loopback::connect_to;
using brig::testing::loopback::port_of;
using brig::testing::loopback::read_all;
using brig::testing::loopback::send_all;

UniqueFd listener() {
  return brig::testing::loopback::bound();
}

// Reads until `needle` has arrived.
std::string read_until(int fd, std::string_view needle) {
  std::string out;
  char buf[16384];
  while (out.find(needle) == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::string request(std::string_view method, std::string_view path, std::string_view auth,
                    std::string_view body = "", bool close = true) {
  return fmt::format(
      "{} {} HTTP/1.1\r\nHost: 127.0.0.1:3129\r\n{}Content-Type: "
      "application/json\r\nContent-Length: {}\r\n{}\r\n{}",
      method, path, auth, body.size(), close ? "Connection: close\r\n" : "", body);
}

std::string x_api_key(std::string_view key) {
  return fmt::format("x-api-key: {}\r\n", key);
}

class LlmProxy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ::signal(SIGPIPE, SIG_IGN); }

  // Starts the proxy with one route per (prefix, target, header) and one
  // jail; the real key of every route is kRealKey.
  void start(std::vector<policy::LlmRoute> routes, ProxyOptions options = {}) {
    std::vector<Secret> keys;
    for (std::size_t i = 0; i < routes.size(); ++i) keys.push_back(*Secret::hold(kRealKey));
    options.audit = [this](const LlmRecord& r) {
      std::lock_guard lock(mu);
      records.push_back(r);
    };
    auto started = Proxy::start(routes, std::move(keys), std::move(options));
    ASSERT_TRUE(started) << started.error().to_string();
    proxy = std::move(*started);
    placeholder = *new_placeholder();
    auto fd = listener();
    port = port_of(fd.get());
    jail = proxy->add_jail("job-1", placeholder, std::move(fd));
  }

  policy::LlmRoute route(std::string prefix, std::string target, std::string header = "x-api-key") {
    policy::LlmRoute r;
    r.prefix = std::move(prefix);
    r.target = std::move(target);
    r.header = std::move(header);
    r.key_env = "K";
    r.key_variable = "ANTHROPIC_API_KEY";
    r.base_url_variable = "ANTHROPIC_BASE_URL";
    return r;
  }

  std::string call(std::string_view req) {
    auto fd = connect_to(port);
    send_all(fd.get(), req);
    return read_all(fd.get());
  }

  std::vector<LlmRecord> audit() {
    std::lock_guard lock(mu);
    return records;
  }

  std::string ca_file(const TestPki& pki) {
    const std::string path = fmt::format("/tmp/brig-llm-ca-{}.pem", ::getpid());
    std::ofstream(path) << pki.ca_pem;
    files.push_back(path);
    return path;
  }

  void TearDown() override {
    proxy.reset();
    for (const auto& f : files) std::remove(f.c_str());
  }

  std::unique_ptr<Proxy> proxy;
  std::string placeholder;
  std::uint16_t port = 0;
  std::uint64_t jail = 0;
  std::mutex mu;
  std::vector<LlmRecord> records;
  std::vector<std::string> files;
};

TEST_F(LlmProxy, SwapsThePlaceholderInTheRoutesHeaderOnly) {
  FakeUpstream up;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port())),
         route("openai", fmt::format("http://127.0.0.1:{}/v1", up.port()), "bearer")});
  // The placeholder in a body or another header is the jail's business:
  // it goes on as it is, never replaced.
  const std::string body = fmt::format("{{\"note\":\"{}\"}}", placeholder);
  auto reply = call(request(
      "POST", "/anthropic/v1/echo",
      fmt::format("Authorization: Bearer {}\r\nx-note: {}\r\n", placeholder, placeholder), body));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(reply, HasSubstr("ok" + body));
  reply = call(request("GET", "/openai/models", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200 OK"));

  auto seen = up.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].path, "/v1/echo");
  EXPECT_EQ(seen[0].headers["x-api-key"], kRealKey);
  EXPECT_FALSE(seen[0].headers.contains("authorization"));
  EXPECT_EQ(seen[0].headers["x-note"], placeholder);
  EXPECT_EQ(seen[0].headers["host"], fmt::format("127.0.0.1:{}", up.port()));
  EXPECT_EQ(seen[0].body, body);
  EXPECT_EQ(seen[1].path, "/v1/models");
  EXPECT_EQ(seen[1].headers["authorization"], fmt::format("Bearer {}", kRealKey));
  EXPECT_FALSE(seen[1].headers.contains("x-api-key"));
  // The key appears exactly once in what the upstream got: its header.
  for (const auto& s : seen) {
    const std::string all = s.head + s.body;
    EXPECT_EQ(all.find(kRealKey), all.rfind(kRealKey));
  }
}

TEST_F(LlmProxy, StreamsAsTheEventsArrive) {
  FakeUpstream up;
  up.pause = 400ms;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port()))});
  auto fd = connect_to(port);
  const auto sent = Clock::now();
  send_all(fd.get(), request("POST", "/anthropic/v1/messages", x_api_key(placeholder), "{}"));
  const std::string first = read_until(fd.get(), "message_start");
  const auto first_at = Clock::now() - sent;
  ASSERT_THAT(first, HasSubstr("text/event-stream"));
  // The first event came before the upstream even wrote the second.
  EXPECT_LT(first_at, 300ms);
  const std::string rest = first + read_all(fd.get());
  EXPECT_GE(Clock::now() - sent, 800ms);
  EXPECT_THAT(rest, HasSubstr("message_delta"));
  EXPECT_THAT(rest, HasSubstr("0\r\n\r\n"));

  proxy.reset();  // every record is written
  auto records = audit();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].route, "anthropic");
  EXPECT_EQ(records[0].status, 200);
  EXPECT_EQ(records[0].input_tokens, 21u);
  EXPECT_EQ(records[0].output_tokens, 42u);
  ASSERT_TRUE(records[0].first_byte);
  EXPECT_LT(*records[0].first_byte, 300ms);
  EXPECT_GT(records[0].bytes_down, 100u);
  EXPECT_THAT(describe(records[0]), HasSubstr("tokens 21 in / 42 out"));
}

TEST_F(LlmProxy, HttpsVerifiedWithTheRoutesCa) {
  const TestPki pki = TestPki::make();
  FakeUpstream up(&pki);
  auto trusted = route("local", fmt::format("https://127.0.0.1:{}/v1", up.port()), "bearer");
  trusted.ca_file = ca_file(pki);
  auto untrusted = route("plain", fmt::format("https://127.0.0.1:{}/v1", up.port()), "bearer");
  auto skip = route("skip", fmt::format("https://127.0.0.1:{}/v1", up.port()), "bearer");
  skip.dangerously_skip_verify = true;
  ProxyOptions o;
  o.max_attempts = 1;
  start({trusted, untrusted, skip}, o);

  auto reply = call(request("POST", "/local/json", x_api_key(placeholder), "{}"));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(reply, HasSubstr("prompt_tokens"));
  reply = call(request("POST", "/plain/json", x_api_key(placeholder), "{}"));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 502"));
  EXPECT_THAT(reply, HasSubstr("certificate verify failed"));
  reply = call(request("POST", "/skip/json", x_api_key(placeholder), "{}"));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200 OK"));
  auto seen = up.requests();
  ASSERT_EQ(seen.size(), 2u);  // the unverified upstream never got the request (nor the key)
  EXPECT_EQ(seen[0].headers["authorization"], fmt::format("Bearer {}", kRealKey));
}

TEST_F(LlmProxy, HostNameChecked) {
  const TestPki pki = TestPki::make();  // its certificate names 127.0.0.1 only
  FakeUpstream up(&pki);
  auto r = route("local", fmt::format("https://localhost:{}", up.port()));
  r.ca_file = ca_file(pki);
  ProxyOptions o;
  o.max_attempts = 1;
  start({r}, o);
  auto reply = call(request("GET", "/local/v1/json", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 502"));
  EXPECT_THAT(reply, HasSubstr("certificate verify failed"));
  EXPECT_TRUE(up.requests().empty());
}

TEST_F(LlmProxy, RefusesWithAClearErrorAndKeepsServing) {
  FakeUpstream up;
  ProxyOptions o;
  o.max_head = 4096;
  o.max_body = 1024 * 1024;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port()))}, o);
  const std::string other = *new_placeholder();
  auto other_fd = listener();
  const auto other_jail = proxy->add_jail("job-2", other, std::move(other_fd));
  const std::string gone = *new_placeholder();
  auto gone_fd = listener();
  proxy->remove_jail(proxy->add_jail("job-3", gone, std::move(gone_fd)));

  struct Case {
    std::string req;
    std::string status;
    std::string says;
  };
  const Case cases[] = {
      {request("GET", "/anthropic/v1/models", ""), "401", "no key in the request"},
      {request("GET", "/anthropic/v1/models", x_api_key(std::string(32, 'a'))), "401",
       "not this jail's placeholder"},
      {request("GET", "/anthropic/v1/models", x_api_key(kRealKey)), "401",
       "not this jail's placeholder"},
      {request("GET", "/anthropic/v1/models", x_api_key(other)), "403",
       "another jail's placeholder"},
      {request("GET", "/anthropic/v1/models", x_api_key(gone)), "403", "jail that has ended"},
      {request("GET", "/anthropic/v1/models",
               fmt::format("x-api-key: {}\r\nAuthorization: Bearer x\r\n", placeholder)),
       "401", "not this jail's placeholder"},
      {request("GET", "/anthropic/v1/models", "Authorization: Basic eDp5\r\n"), "401",
       "not \"Bearer <key>\""},
      {request("GET", "/openai/v1/models", x_api_key(placeholder)), "404",
       "no LLM route serves /openai/v1/models; the routes here are /anthropic"},
      {"GET /anthropic/v1/models HTTP/1.1\nHost: x\n\n", "400", ""},
      {"GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", "400", "origin-form"},
      {fmt::format("GET /anthropic/v1/models HTTP/1.1\r\nx-pad: {}\r\n\r\n",
                   std::string(5000, 'p')),
       "431", ""},
      {request("POST", "/anthropic/v1/echo", x_api_key(placeholder),
               std::string(o.max_body + 1, 'b')),
       "413", "over 1048576 bytes"},
  };
  for (const Case& c : cases) {
    const std::string reply = call(c.req);
    EXPECT_THAT(reply, HasSubstr("HTTP/1.1 " + c.status)) << c.req.substr(0, 80);
    EXPECT_THAT(reply, HasSubstr(c.says)) << c.req.substr(0, 80);
    EXPECT_THAT(reply, Not(HasSubstr(kRealKey)));
  }
  EXPECT_TRUE(up.requests().empty());
  // Still serving, and the other jail's placeholder works on its own listener only.
  EXPECT_THAT(call(request("GET", "/anthropic/v1/json", x_api_key(placeholder))),
              HasSubstr("HTTP/1.1 200"));
  proxy->remove_jail(other_jail);
  for (const auto& r : audit()) {
    EXPECT_THAT(describe(r), Not(HasSubstr(kRealKey)));
    EXPECT_THAT(r.error, Not(HasSubstr(kRealKey)));
  }
}

// The defaults: a body over 10 MiB is refused before anything goes out,
// and a head that stops arriving gets 408.
TEST_F(LlmProxy, TenMibBodyAndASlowHead) {
  FakeUpstream up;
  ProxyOptions o;
  o.head_timeout = 300ms;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port()))}, o);
  const std::string body(10 * 1024 * 1024 + 1, 'b');
  auto reply = call(request("POST", "/anthropic/v1/echo", x_api_key(placeholder), body));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(reply, HasSubstr("over 10485760 bytes"));
  auto fd = connect_to(port);
  send_all(fd.get(), "POST /anthropic/v1/echo HTTP/1.1\r\nHost: x\r\n");
  reply = read_all(fd.get());
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 408"));
  EXPECT_THAT(reply, HasSubstr("did not arrive within 300 ms"));
  EXPECT_TRUE(up.requests().empty());
  const std::string exact(10 * 1024 * 1024, 'e');
  reply = call(request("POST", "/anthropic/v1/echo", x_api_key(placeholder), exact));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200"));
  ASSERT_EQ(up.requests().size(), 1u);
  EXPECT_EQ(up.requests()[0].body, exact);
}

TEST_F(LlmProxy, RetriesBeforeTheFirstByteOnly) {
  FakeUpstream up;
  up.failures = 2;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port()))});
  auto reply = call(request("POST", "/anthropic/v1/flaky", x_api_key(placeholder), "{\"a\":1}"));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 200"));
  auto seen = up.requests();
  ASSERT_EQ(seen.size(), 3u);
  for (const auto& s : seen) EXPECT_EQ(s.body, "{\"a\":1}");
  // A status that stays busy is passed on once the attempts are used up.
  reply = call(request("GET", "/anthropic/v1/busy", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 503 Busy"));
  EXPECT_EQ(up.requests().size(), 6u);
  // A wait longer than max_retry_wait is not waited: the 429 goes on at once.
  const auto t0 = Clock::now();
  reply = call(request("GET", "/anthropic/v1/later", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 429"));
  EXPECT_THAT(reply, HasSubstr("Retry-After: 3600"));
  EXPECT_LT(Clock::now() - t0, 2s);
  EXPECT_EQ(up.requests().size(), 7u);
  proxy.reset();
  auto records = audit();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].attempts, 3);
  EXPECT_EQ(records[1].status, 503);
}

TEST_F(LlmProxy, ConnectErrorsAndTimeoutsAnswer502And504) {
  FakeUpstream up;
  auto closed = listener();  // bound, then closed: nothing listens on its port
  const std::uint16_t dead = port_of(closed.get());
  closed.reset();
  ProxyOptions o;
  o.first_byte_timeout = 300ms;
  o.idle_timeout = 300ms;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port())),
         route("dead", fmt::format("http://127.0.0.1:{}", dead))},
        o);
  auto reply = call(request("GET", "/dead/v1/x", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 502"));
  EXPECT_THAT(reply, HasSubstr("Connection refused"));
  reply = call(request("GET", "/anthropic/v1/stall", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 504"));
  EXPECT_THAT(reply, HasSubstr("sent no response within 300 ms"));
  reply = call(request("GET", "/anthropic/v1/reset", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 502"));
  // A stream that stalls mid-way is cut: the client sees the end of the connection.
  const auto t0 = Clock::now();
  reply = call(request("GET", "/anthropic/v1/stall-stream", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("data: one"));
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_THAT(call(request("GET", "/anthropic/v1/json", x_api_key(placeholder))),
              HasSubstr("HTTP/1.1 200"));
}

// A target that never completes the connect: a listener whose accept queue
// is full (the kernel drops further SYNs) answers nothing.
TEST_F(LlmProxy, AConnectThatHangsIs504) {
  UniqueFd full(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(full.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(full.get(), 0), 0);
  std::vector<UniqueFd> queued;
  for (int i = 0; i < 4; ++i) {
    UniqueFd c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port_of(full.get()));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(c.get(), reinterpret_cast<sockaddr*>(&to), sizeof to);
    queued.push_back(std::move(c));
  }
  ProxyOptions o;
  o.connect_timeout = 300ms;
  o.max_attempts = 1;
  start({route("slow", fmt::format("http://127.0.0.1:{}", port_of(full.get())))}, o);
  const auto t0 = Clock::now();
  const std::string reply = call(request("GET", "/slow/v1/x", x_api_key(placeholder)));
  EXPECT_THAT(reply, HasSubstr("HTTP/1.1 504"));
  EXPECT_THAT(reply, HasSubstr("no connection in time"));
  EXPECT_LT(Clock::now() - t0, 3s);
}

TEST_F(LlmProxy, AClientThatGoesCancelsTheUpstreamRequest) {
  FakeUpstream up;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port()))});
  {
    auto fd = connect_to(port);
    send_all(fd.get(), request("GET", "/anthropic/v1/endless", x_api_key(placeholder)));
    EXPECT_THAT(read_until(fd.get(), "data: more"), HasSubstr("data: more"));
  }  // closed mid-stream
  const auto until = Clock::now() + 5s;
  while (up.cut_streams() == 0 && Clock::now() < until) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(up.cut_streams(), 1);
  EXPECT_THAT(call(request("GET", "/anthropic/v1/json", x_api_key(placeholder))),
              HasSubstr("HTTP/1.1 200"));
}

TEST_F(LlmProxy, RemovingTheJailEndsItsStreams) {
  FakeUpstream up;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port()))});
  auto fd = connect_to(port);
  send_all(fd.get(), request("GET", "/anthropic/v1/endless", x_api_key(placeholder)));
  read_until(fd.get(), "data: more");
  EXPECT_EQ(proxy->connections(), 1u);
  proxy->remove_jail(jail);
  EXPECT_EQ(proxy->connections(), 0u);
  read_all(fd.get());  // ends: the connection was closed
  const auto until = Clock::now() + 5s;
  while (up.cut_streams() == 0 && Clock::now() < until) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(up.cut_streams(), 1);
}

TEST_F(LlmProxy, KeepAliveBothWaysPoolsTheUpstream) {
  FakeUpstream up;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port()))});
  auto fd = connect_to(port);
  for (int i = 0; i < 3; ++i) {
    send_all(fd.get(), request("GET", "/anthropic/v1/json", x_api_key(placeholder), "", false));
    EXPECT_THAT(read_until(fd.get(), "completion_tokens\":9}}"), HasSubstr("HTTP/1.1 200"));
  }
  // The client has the last byte a moment before the proxy pools the
  // upstream connection: once this client connection is gone, it has.
  fd.reset();
  const auto until = Clock::now() + 5s;
  while (proxy->connections() != 0 && Clock::now() < until) std::this_thread::sleep_for(5ms);
  EXPECT_THAT(call(request("GET", "/anthropic/v1/json", x_api_key(placeholder))),
              HasSubstr("HTTP/1.1 200"));
  EXPECT_EQ(up.requests().size(), 4u);
  EXPECT_EQ(up.connections(), 1);
}

TEST_F(LlmProxy, AHundredConcurrentStreams) {
  FakeUpstream up;
  up.pause = 200ms;
  start({route("anthropic", fmt::format("http://127.0.0.1:{}", up.port()))});
  std::atomic<int> complete{0};
  std::vector<std::thread> clients;
  const auto t0 = Clock::now();
  for (int i = 0; i < 100; ++i) {
    clients.emplace_back([&] {
      const std::string reply =
          call(request("POST", "/anthropic/v1/messages", x_api_key(placeholder), "{}"));
      if (reply.find("message_delta") != std::string::npos && reply.ends_with("0\r\n\r\n"))
        ++complete;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(complete, 100);
  // Concurrent, not one after another (each stream takes 400 ms).
  EXPECT_LT(Clock::now() - t0, 20s);
  EXPECT_EQ(up.requests().size(), 100u);
}

}  // namespace
}  // namespace brig::llm
