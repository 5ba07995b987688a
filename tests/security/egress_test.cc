// Network mode `proxy` end to end (issue 13): a jail whose network namespace
// has only loopback, brig's egress proxy on the jail's 127.0.0.1:3128 and its
// DNS stub on 127.0.0.1:53. Commands run through `brig run` (and one test
// through the MCP `exec` tool of `brig serve`) against hosts on the host's
// 127.0.0.1, reached only under the names the policy's `hosts` gives them.
// What the policy allows must get through the proxy, and nothing may get
// out any other way: each refusal is paired with an allowed request in the
// same jail, and every test server counts what reached it, so no test
// passes because something else broke. Runs as root and as an unprivileged
// user (scripts/test.sh).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jail/base/unique_fd.h"
#include "tests/security/egress_servers.h"
#include "tests/security/security_support.h"
#include "tests/server/test_support.h"

namespace brig::security::test {
namespace {

using jail::test::lines;
using Json = server::testing::Json;
using ::testing::Contains;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The proxy's address on the jail's own loopback (issue 13).
const std::string kProxy = "http://127.0.0.1:3128";

std::string read_host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_host_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// 256 KiB holding every byte value, NUL included: larger than any one
// buffer of the relay, so the whole path is exercised, and byte-exact.
std::string file_bytes() {
  std::string s(256 * 1024, '\0');
  uint32_t x = 2463534242u;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return s;
}

// A mismatch of two large binary strings, said briefly.
std::string differ(const std::string& got, const std::string& want) {
  size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  return "got " + std::to_string(got.size()) + " bytes, want " + std::to_string(want.size()) +
         "; first difference at " + std::to_string(at) + "; got starts: " + got.substr(0, 200);
}

// `curl` inside the jail, bounded (a hung proxy fails the step, not the run).
std::string curl(const std::string& args) {
  return "curl -sS --max-time 20 " + args;
}

// A curl step whose last line says what happened: `<tag>=<exit status>`.
std::string step(const std::string& tag, const std::string& command) {
  return command + "; echo " + tag + "=$?\n";
}

// curl -x to the proxy by hand, for targets NO_PROXY would send direct
// (127.0.0.1, localhost): `--noproxy ''` overrides NO_PROXY.
std::string via_proxy(const std::string& args) {
  return curl("-x " + kProxy + " --noproxy '' " + args);
}

// Node's version as `v<major>.<minor>.<patch>`, from its --version line.
struct NodeVersion {
  int major = 0, minor = 0;
};
std::optional<NodeVersion> node_version(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("node=v([0-9]+)\\.([0-9]+)\\.[0-9]+"))) return {};
  return NodeVersion{std::stoi(m[1]), std::stoi(m[2])};
}

// Whether Node's own fetch honours HTTP_PROXY when NODE_USE_ENV_PROXY=1:
// added in v24.5.0 and backported to v22.21.0; older Node ignores it.
bool node_honours_env_proxy(NodeVersion v) {
  return v.major > 24 || (v.major == 24 && v.minor >= 5) || (v.major == 22 && v.minor >= 21);
}

class EgressTest : public SecurityTest {
 protected:
  void SetUp() override {
    SecurityTest::SetUp();
    if (HasFatalFailure()) return;
    const std::string root = web_root_.path();
    write_host_file(root + "/file", content_);
    write_host_file(root + "/small", "small-content\n");
    write_host_file(root + "/small2", "small2-content\n");
    web_.emplace(root);
    ip_web_.emplace(root);
    ASSERT_NE(web_->port(), 0);
    ASSERT_NE(ip_web_->port(), 0);
    ASSERT_NE(tally_.tcp_port(), 0);
    ASSERT_NE(tally_.udp_port(), 0);
    tls_.emplace(tls_root_.path(), "tls.test");
    ASSERT_NE(tls_->port(), 0) << tls_->error();
    write_host_file(tls_root_.path() + "/page.html", "tls-page\n");
    // The client's trust anchor, where the jail can read it.
    write_host_file(workspace() + "/tls-cert.pem", read_host_file(tls_->cert_path()));
    ASSERT_EQ(::chmod((workspace() + "/tls-cert.pem").c_str(), 0644), 0);
    policy_ = policy_file("proxy", policy_text());
  }

  void TearDown() override {
    // s_server is a child of this process: gone before the leftover checks.
    if (tls_) tls_->stop();
    SecurityTest::TearDown();
  }

  // The test policy: names for the host's loopback through `hosts`, a
  // wildcard allow with a deny inside it, an allowed bare address (the
  // second web server), and `localhost`, allowed by name but not by address.
  std::string policy_text() const {
    const std::string p = std::to_string(web_->port());
    return "extends = \"default\"\n"
           "[network]\n"
           "mode = \"proxy\"\n"
           "allow = [\"web.test:" +
           p + "\", \"tls.test:" + std::to_string(tls_->port()) + "\", \"*.allowed.test:" + p +
           "\", \"127.0.0.1:" + std::to_string(ip_web_->port()) + "\", \"localhost:" + p +
           "\"]\n"
           // Without a port: a deny refuses every port (80 and 443 alone
           // would leave this port to the wildcard above).
           "deny = [\"bad.allowed.test\"]\n"
           "hosts = { \"web.test\" = \"127.0.0.1\", \"tls.test\" = \"127.0.0.1\", "
           "\"bad.allowed.test\" = \"127.0.0.1\", \"ok.allowed.test\" = \"127.0.0.1\" }\n";
  }

  // `brig run --policy <proxy policy> -- <shell> -c SCRIPT` from the workspace.
  BrigRan jail_sh(const std::string& script, const std::string& shell = "/bin/sh") {
    return brig_run({"--policy", policy_, "--", shell, "-c", script});
  }

  // http://<host>:<web port><path>
  std::string web_url(const std::string& host, const std::string& path) const {
    return "http://" + host + ":" + std::to_string(web_->port()) + path;
  }

  const std::string content_ = file_bytes();
  jail::test::TempDir web_root_;
  jail::test::TempDir tls_root_;
  std::optional<LoopbackHttpServer> web_;     // web.test and the names under allowed.test
  std::optional<LoopbackHttpServer> ip_web_;  // allowed by its bare address only
  LoopbackTally tally_;                       // a port nothing allows
  std::optional<TlsServer> tls_;              // tls.test
  std::string policy_;
};

TEST_F(EgressTest, HttpThroughTheProxyGetsTheFileAndNoProxyGetsNothing) {
  const BrigRan ran =
      jail_sh(step("direct", curl("--noproxy '*' -o direct " + web_url("web.test", "/file"))) +
              step("proxied", curl("-o got " + web_url("web.test", "/file"))));
  const auto l = lines(ran.out);
  // Without the proxy curl resolves web.test (the stub answers 127.0.0.1)
  // and connects to the jail's own loopback, where nothing listens.
  EXPECT_THAT(l, Contains("direct=7")) << ran.out << ran.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() + "/direct"));
  // Control: through the proxy (curl reads http_proxy), the file's bytes.
  EXPECT_THAT(l, Contains("proxied=0")) << ran.out << ran.err;
  const std::string got = read_host_file(workspace() + "/got");
  EXPECT_TRUE(got == content_) << differ(got, content_);
  // One connection reached the server: the proxy's.
  EXPECT_EQ(web_->requests_for("/file"), 1u);
  EXPECT_EQ(web_->connections(), 1u);
}

TEST_F(EgressTest, HttpsThroughConnectGetsThePageAndNoProxyGetsNothing) {
  const std::string url = "https://tls.test:" + std::to_string(tls_->port()) + "/page.html";
  const BrigRan ran =
      jail_sh(step("direct", curl("--noproxy '*' --cacert tls-cert.pem " + url)) +
              step("tunnel", curl("--cacert tls-cert.pem -w 'connect=%{http_connect}\\n' " + url)));
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("direct=7")) << ran.out << ran.err;
  // Control: CONNECT through the proxy, TLS end to end with tls.test's
  // certificate (no interception: the jail's trust anchor is the server's own).
  EXPECT_THAT(l, Contains("tls-page")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("connect=200"));
  EXPECT_THAT(l, Contains("tunnel=0"));
}

TEST_F(EgressTest, TheHostsLoopbackByAddressIsRefused) {
  // The web server's own address and port: the policy allows the port only
  // under the name web.test, never 127.0.0.1 itself.
  const std::string by_address = "http://127.0.0.1:" + std::to_string(web_->port()) + "/file";
  const BrigRan ran = jail_sh(
      step("proxied", via_proxy("-o refused -w 'status=%{http_code}\\n' " + by_address)) +
      // NO_PROXY names 127.0.0.1: plain curl goes direct, to the jail's loopback.
      step("direct", curl("-o direct " + by_address)) +
      step("named", curl("-o named -w 'status=%{http_code}\\n' " + web_url("web.test", "/file"))));
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("status=403")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("direct=7")) << ran.out << ran.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() + "/direct"));
  // Control: the same address and port, named by the policy, is served.
  EXPECT_THAT(l, Contains("status=200"));
  EXPECT_TRUE(read_host_file(workspace() + "/named") == content_);
  EXPECT_EQ(web_->connections(), 1u) << "only the named request may reach the server";
}

TEST_F(EgressTest, ARefusedPortOnAnAllowedHostIsAnsweredWithTheLineThatWouldAllowIt) {
  const std::string port = std::to_string(tally_.tcp_port());
  const BrigRan ran = jail_sh(
      step("http", curl("-o body -w 'status=%{http_code}\\n' http://web.test:" + port + "/")) +
      step("connect_exit", curl("-w 'connect=%{http_connect}\\n' https://web.test:" + port + "/")) +
      step("allowed", curl("-o small " + web_url("web.test", "/small"))));
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("status=403")) << ran.out << ran.err;
  const std::string body = read_host_file(workspace() + "/body");
  EXPECT_THAT(body, HasSubstr("allow_add"));
  EXPECT_THAT(body, HasSubstr("web.test:" + port));
  // CONNECT to the same port: refused before a tunnel exists (curl: 56).
  EXPECT_THAT(l, Contains("connect=403"));
  EXPECT_THAT(l, Contains("connect_exit=56"));
  EXPECT_EQ(tally_.tcp_arrivals(), 0u) << "the proxy connected to a refused port";
  // Control: the allowed port of the same host.
  EXPECT_THAT(l, Contains("allowed=0"));
  EXPECT_EQ(read_host_file(workspace() + "/small"), "small-content\n");
}

TEST_F(EgressTest, DenyWinsOverTheWildcardAllow) {
  const BrigRan ran = jail_sh(
      step("bad",
           curl("-o bad -w 'bad=%{http_code}\\n' " + web_url("bad.allowed.test", "/small"))) +
      step("ok", curl("-o ok -w 'ok=%{http_code}\\n' " + web_url("ok.allowed.test", "/small"))));
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("bad=403")) << ran.out << ran.err;
  // The refusal names the deny rule as the policy wrote it.
  const std::string body = read_host_file(workspace() + "/bad");
  EXPECT_THAT(body, HasSubstr("deny"));
  EXPECT_THAT(body, HasSubstr("`bad.allowed.test`"));
  // Control: a sibling under the same wildcard.
  EXPECT_THAT(l, Contains("ok=200"));
  EXPECT_EQ(read_host_file(workspace() + "/ok"), "small-content\n");
  EXPECT_EQ(web_->connections(), 1u) << "only ok.allowed.test may reach the server";
}

TEST_F(EgressTest, AnUnlistedNameIsRefused) {
  const BrigRan ran = jail_sh(
      step("other",
           curl("-o other -w 'other=%{http_code}\\n' " + web_url("other.test", "/small"))) +
      step("web", curl("-o web -w 'web=%{http_code}\\n' " + web_url("web.test", "/small"))));
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("other=403")) << ran.out << ran.err;
  EXPECT_THAT(read_host_file(workspace() + "/other"),
              HasSubstr("allow_add = [\"other.test:" + std::to_string(web_->port()) + "\"]"));
  EXPECT_THAT(l, Contains("web=200"));
  EXPECT_EQ(web_->connections(), 1u);
}

TEST_F(EgressTest, ANameResolvingToLoopbackWithoutThePolicyNamingTheAddressIsRefused) {
  // `localhost` is allowed by name, and the host resolves it to 127.0.0.1,
  // which no `hosts` entry or address rule names: DNS rebinding's shape.
  const BrigRan ran = jail_sh(
      step("rebound",
           via_proxy("-o rebound -w 'rebound=%{http_code}\\n' " + web_url("localhost", "/small"))) +
      step("named", curl("-o named -w 'named=%{http_code}\\n' " + web_url("web.test", "/small"))));
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("rebound=403")) << ran.out << ran.err;
  // Control: the same address under a name the policy maps to it.
  EXPECT_THAT(l, Contains("named=200"));
  EXPECT_EQ(web_->connections(), 1u) << "only web.test may reach the server";
}

TEST_F(EgressTest, GitClonesOverDumbHttpThroughTheProxyOnly) {
  // A bare repository served as files, as git's dumb HTTP protocol reads it.
  const std::string root = web_root_.path();
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + root,
                                        "GIT_CONFIG_NOSYSTEM=1"};
  const HostRan made =
      host_command({"/bin/sh", "-c",
                    "git init -q -b main src && echo 'hello from the host' > src/README && "
                    "git -C src add README && "
                    "git -C src -c user.name=test -c user.email=test@test commit -q -m first && "
                    "git clone -q --bare src repo.git && git -C repo.git update-server-info"},
                   root, env);
  ASSERT_TRUE(made.ok()) << made.output;

  const std::string url = web_url("web.test", "/repo.git");
  // NO_PROXY='*': git (libcurl) connects directly, to the jail's loopback.
  const BrigRan direct =
      jail_sh(step("direct", "NO_PROXY='*' no_proxy='*' git clone -q " + url + " direct 2>&1"));
  EXPECT_THAT(lines(direct.out), Not(Contains("direct=0"))) << direct.out << direct.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() + "/direct/README"));
  EXPECT_EQ(web_->connections(), 0u);

  // Control: through the proxy.
  const BrigRan ran = jail_sh(step("clone", "git clone -q " + url + " clone 2>&1"));
  EXPECT_THAT(lines(ran.out), Contains("clone=0")) << ran.out << ran.err;
  EXPECT_EQ(read_host_file(workspace() + "/clone/README"), "hello from the host\n");
  // Dumb HTTP: git read the refs file as a file.
  EXPECT_GE(web_->requests_for("/repo.git/info/refs"), 1u);
}

// A command prefix that takes every proxy setting away (npm's noproxy has no
// wildcard), so the client goes direct.
const std::string kNoProxyEnv =
    "env -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u http_proxy -u https_proxy -u all_proxy "
    "-u PIP_PROXY -u npm_config_proxy -u npm_config_https_proxy ";

TEST_F(EgressTest, PipAndNpmReadALocalIndexThroughTheProxyOnly) {
  // pip's "simple" index of one project, and npm's registry document of one
  // package: what each client reads first.
  const std::string root = web_root_.path();
  std::filesystem::create_directories(root + "/simple/brigpkg");
  write_host_file(root + "/simple/brigpkg/index.html",
                  "<!DOCTYPE html><html><body>"
                  "<a href=\"brigpkg-1.0-py3-none-any.whl\">brigpkg-1.0-py3-none-any.whl</a>"
                  "</body></html>\n");
  write_host_file(root + "/brigpkg",
                  R"({"name":"brigpkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":)"
                  R"({"name":"brigpkg","version":"1.0.0","description":"served on loopback",)"
                  R"("dist":{"tarball":"http://web.test/brigpkg-1.0.0.tgz","shasum":"0"}}}})");
  const std::string pip =
      "python3 -m pip index versions brigpkg --disable-pip-version-check "
      "--no-cache-dir --timeout 10 --retries 0 --trusted-host web.test --index-url " +
      web_url("web.test", "/simple/");
  const std::string npm =
      "npm view brigpkg version --no-update-notifier --fetch-retries=0 "
      "--registry " +
      web_url("web.test", "/");
  const BrigRan ran = jail_sh(step("pip_direct", kNoProxyEnv + pip) + step("pip", pip + " 2>&1") +
                              step("npm_direct", kNoProxyEnv + npm) + step("npm", npm + " 2>&1"));
  const auto l = lines(ran.out);
  // Without the proxy both reach for web.test's address, the jail's own
  // loopback, where nothing listens.
  EXPECT_THAT(l, Not(Contains("pip_direct=0"))) << ran.out << ran.err;
  EXPECT_THAT(l, Not(Contains("npm_direct=0"))) << ran.out << ran.err;
  // Control: through the proxy, each read its index.
  EXPECT_THAT(l, Contains("pip=0")) << ran.out << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("brigpkg (1.0)"));
  EXPECT_THAT(l, Contains("npm=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("1.0.0")) << ran.out;
  EXPECT_GE(web_->requests_for("/simple/brigpkg/"), 1u);
  EXPECT_GE(web_->requests_for("/brigpkg"), 1u);
}

TEST_F(EgressTest, BrigConnectTunnelsToAnAllowedPortAndIsRefusedElsewhere) {
  // The program GIT_SSH_COMMAND names, which ssh would run as ProxyCommand.
  const std::string program =
      "prog=$(printf %s \"$GIT_SSH_COMMAND\" | sed -n \"s/.*ProxyCommand='\\([^ ]*\\) "
      "connect.*/\\1/p\"); echo \"prog=$prog\"\n";
  const std::string get = "printf 'GET /small HTTP/1.0\\r\\nHost: web.test\\r\\n\\r\\n'";
  const std::string port = std::to_string(web_->port());
  // A sanitized brig's leak check cannot stop the world under the jail's
  // seccomp filter (no ptrace) and would fail its exit, and its shadow
  // memory does not fit the RLIMIT_DATA that stands in for the memory limit
  // without a cgroup (unprivileged): the release brig needs neither.
  const std::string connect = "ASAN_OPTIONS=detect_leaks=0 \"$prog\" connect ";
  const std::string policy =
      policy_file("proxy-unlimited", policy_text() + "[limits]\nmemory = \"unlimited\"\n");
  const BrigRan ran =
      brig_run({"--policy", policy, "--", "/bin/sh", "-c",
                program + step("allowed", get + " | " + connect + "web.test " + port) +
                    step("refused", get + " | " + connect + "other.test " + port + " 2>&1")});
  const auto l = lines(ran.out);
  EXPECT_THAT(ran.out, HasSubstr("prog=/")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("allowed=0")) << ran.out << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("small-content"));
  EXPECT_THAT(l, Contains("refused=1")) << ran.out << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("other.test:" + port + " refused: HTTP/1.1 403"));
  EXPECT_THAT(ran.out, HasSubstr("allow_add"));
  EXPECT_EQ(web_->requests_for("/small"), 1u);
}

TEST_F(EgressTest, TheDnsStubAnswersAllowedNamesAndRefusesOthers) {
  const BrigRan ran = jail_sh("cat /etc/resolv.conf\n" + step("web", "getent hosts web.test") +
                              step("ok", "getent hosts ok.allowed.test") +
                              step("other", "getent hosts other.test"));
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("nameserver 127.0.0.1")) << ran.out << ran.err;
  EXPECT_THAT(ran.out, ContainsRegex("127\\.0\\.0\\.1[ \t]+web\\.test\n"));
  EXPECT_THAT(l, Contains("web=0"));
  EXPECT_THAT(ran.out, ContainsRegex("127\\.0\\.0\\.1[ \t]+ok\\.allowed\\.test\n"));
  EXPECT_THAT(l, Contains("ok=0"));
  // getent: 2 is "not found" (the stub REFUSED, nothing else answered).
  EXPECT_THAT(l, Contains("other=2")) << ran.out << ran.err;
  EXPECT_THAT(ran.out, Not(HasSubstr("other.test\n")));
}

TEST_F(EgressTest, RawTcpAndUdpToTheHostNeverArrive) {
  const std::string tcp = std::to_string(tally_.tcp_port());
  const std::string udp = std::to_string(tally_.udp_port());
  const std::string web = std::to_string(web_->port());
  const BrigRan ran = jail_sh(
      // Straight at the host's listeners, by address and by allowed name.
      step("tcp", "(exec 3<>/dev/tcp/127.0.0.1/" + tcp + ")") +
          step("tcp_named", "(exec 3<>/dev/tcp/web.test/" + web + ")") +
          step("udp", "echo x >/dev/udp/127.0.0.1/" + udp) +
          step("udp_named", "echo x >/dev/udp/web.test/" + udp) +
          // Control: bash's /dev/tcp works in the jail, to the proxy, which
          // forwards a request written by hand.
          step("by_hand", "(exec 4<>/dev/tcp/127.0.0.1/3128 && printf 'GET " +
                              web_url("web.test", "/small2") + " HTTP/1.0\\r\\nHost: web.test:" +
                              web + "\\r\\n\\r\\n' >&4 && timeout 20 cat <&4)"),
      "/bin/bash");
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Not(Contains("tcp=0"))) << ran.out << ran.err;
  EXPECT_THAT(l, Not(Contains("tcp_named=0"))) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("by_hand=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("small2-content"));
  // Loopback delivers at once: the jail has ended, so whatever it sent is here.
  EXPECT_EQ(tally_.tcp_arrivals(), 0u);
  EXPECT_EQ(tally_.udp_arrivals(), 0u);
  EXPECT_EQ(web_->connections(), 1u) << "only the proxy's connection may reach the server";

  // Control: the counters count (the test itself connects and sends).
  UniqueFd c(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  UniqueFd u(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(tally_.tcp_port()));
  ASSERT_EQ(::connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  a.sin_port = htons(static_cast<uint16_t>(tally_.udp_port()));
  ASSERT_EQ(::sendto(u.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&a), sizeof a), 1);
  EXPECT_EQ(tally_.tcp_arrivals(), 1u);
  EXPECT_EQ(tally_.udp_arrivals(), 1u);
}

TEST_F(EgressTest, ADirectConnectionToAnAllowedAddressFails) {
  // The policy allows 127.0.0.1:<ip_web port> by address: the proxy may go
  // there, the jail may not.
  const std::string url = "http://127.0.0.1:" + std::to_string(ip_web_->port()) + "/file";
  const BrigRan ran = jail_sh(
      step("noproxy", curl("--noproxy '*' -o direct " + url)) +
          // NO_PROXY names 127.0.0.1, so plain curl goes direct too.
          step("plain", curl("-o direct " + url)) +
          step("raw", "(exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(ip_web_->port()) + ")") +
          step("proxied", via_proxy("-o got " + url)),
      "/bin/bash");
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("noproxy=7")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("plain=7")) << ran.out << ran.err;
  EXPECT_THAT(l, Not(Contains("raw=0"))) << ran.out << ran.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() + "/direct"));
  // Control: the proxy connects to the address the policy named.
  EXPECT_THAT(l, Contains("proxied=0")) << ran.out << ran.err;
  const std::string got = read_host_file(workspace() + "/got");
  EXPECT_TRUE(got == content_) << differ(got, content_);
  EXPECT_EQ(ip_web_->connections(), 1u) << "only the proxy's connection may reach the server";
}

TEST_F(EgressTest, NodeFetchGoesThroughTheProxyOrNowhere) {
  // Node's fetch honours the proxy variables only where NODE_USE_ENV_PROXY
  // exists; elsewhere it connects directly, which must fail. Scripts as
  // files: no shell quoting of JavaScript.
  write_host_file(workspace() + "/fetch.js",
                  "const t = setTimeout(() => { console.log('fetch=timeout'); process.exit(3); }, "
                  "20000);\n"
                  "fetch('" +
                      web_url("web.test", "/small") +
                      "').then(r => r.text()).then(\n"
                      "  b => { console.log('fetch=' + b.trim()); clearTimeout(t); },\n"
                      "  e => { console.log('fetch-error=' + ((e.cause && e.cause.code) || "
                      "e.message)); clearTimeout(t); });\n");
  // Control: Node's http module, aimed at the proxy by hand.
  write_host_file(
      workspace() + "/proxied.js",
      "const t = setTimeout(() => { console.log('proxied=timeout'); process.exit(3); }, 20000);\n"
      "require('http').get({host: '127.0.0.1', port: 3128, path: '" +
          web_url("web.test", "/small2") +
          "', headers: {host: 'web.test:" + std::to_string(web_->port()) +
          "'}}, r => {\n"
          "  let b = ''; r.on('data', d => b += d);\n"
          "  r.on('end', () => { console.log('proxied=' + r.statusCode + ' ' + b.trim()); "
          "clearTimeout(t); });\n"
          "}).on('error', e => { console.log('proxied-error=' + e.code); clearTimeout(t); });\n");
  ::chmod((workspace() + "/fetch.js").c_str(), 0644);
  ::chmod((workspace() + "/proxied.js").c_str(), 0644);
  const BrigRan ran = jail_sh("echo node=$(node --version)\nnode fetch.js\nnode proxied.js\n");
  const auto version = node_version(ran.out);
  ASSERT_TRUE(version) << ran.out << ran.err;
  const auto l = lines(ran.out);
  if (node_honours_env_proxy(*version)) {
    EXPECT_THAT(l, Contains("fetch=small-content")) << ran.out << ran.err;
    EXPECT_EQ(web_->requests_for("/small"), 1u);
  } else {
    // Direct: web.test resolves (the stub) to the jail's own loopback.
    EXPECT_THAT(l, Contains("fetch-error=ECONNREFUSED")) << ran.out << ran.err;
    EXPECT_EQ(web_->requests_for("/small"), 0u);
  }
  EXPECT_THAT(l, Contains("proxied=200 small2-content")) << ran.out << ran.err;
  EXPECT_EQ(web_->requests_for("/small2"), 1u);
  EXPECT_EQ(web_->connections(), web_->paths().size()) << "a connection without a request";
}

TEST_F(EgressTest, TheEnvironmentPointsAtTheProxy) {
  const BrigRan ran = jail_sh("env");
  ASSERT_EQ(ran.status, 0) << ran.err;
  const auto l = lines(ran.out);
  for (const char* name :
       {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})
    EXPECT_THAT(l, Contains(std::string(name) + "=" + kProxy)) << ran.out;
  EXPECT_THAT(l, Contains("NO_PROXY=localhost,127.0.0.1")) << ran.out;
  EXPECT_THAT(l, Contains("no_proxy=localhost,127.0.0.1")) << ran.out;
  EXPECT_THAT(l, Contains("NODE_USE_ENV_PROXY=1")) << ran.out;
  // Whatever else names a proxy (npm, pip, cargo, git, Go) names this one.
  for (const std::string& line : l) {
    if (line.find('=') == std::string::npos) continue;  // a multi-line value's tail
    const std::string name = line.substr(0, line.find('='));
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string value = line.substr(name.size() + 1);
    if (lower.find("proxy") != std::string::npos && value.find("://") != std::string::npos) {
      EXPECT_THAT(value, StartsWith(kProxy)) << line;
    }
  }
}

// The same jail through the MCP `exec` tool of `brig serve`, whose relay
// runs in brig-server, and its decisions in the audit log.
// How many sockets `pid` holds once that number has held still for 200 ms
// (a jail's end reaches brig-server a moment after the call's reply).
std::size_t settled_socket_count(pid_t pid) {
  auto count = [pid] {
    std::size_t n = 0;
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      std::error_code link_ec;
      if (std::filesystem::read_symlink(e.path(), link_ec).string().starts_with("socket:")) ++n;
    }
    return n;
  };
  std::size_t last = count();
  for (int still = 0, i = 0; still < 4 && i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::size_t now = count();
    still = now == last ? still + 1 : 0;
    last = now;
  }
  return last;
}

TEST_F(EgressTest, ServeExecReachesOnlyThroughTheProxyAndAuditsEachDecision) {
  namespace st = server::testing;
  // Not needed here, and the reaping below must not wait for it.
  tls_->stop();
  jail::test::TempDir logs;  // outside the workspace, where no jail writes
  const std::string audit = logs.path() + "/audit.jsonl";
  std::vector<Json> replies;
  {
    st::Child server({jail::test::bin_dir() + "/brig", "serve", "--workspace", workspace(),
                      "--policy", policy_, "--audit-log", audit},
                     st::Child::Options{.cwd = workspace()});
    st::LineClient client = server.take_client();
    ASSERT_TRUE(st::initialize(client));
    const std::vector<std::string> commands = {
        curl(web_url("web.test", "/small")),
        step("direct", curl("--noproxy '*' " + web_url("web.test", "/small"))),
        curl("-o /dev/null -w '%{http_code}' " + web_url("other.test", "/small")),
    };
    int id = 1;
    std::vector<std::size_t> sockets;  // brig-server's, after each call
    for (const std::string& command : commands) {
      ASSERT_TRUE(client.send(st::tool_call(id, "exec", {{"command", command}})));
      const auto reply = client.read_response(id++, nullptr, std::chrono::seconds(60));
      ASSERT_TRUE(reply) << command;
      replies.push_back((*reply)["result"]);
      sockets.push_back(settled_socket_count(server.pid()));
    }
    // A finished job stays listed, but its jail's three listeners (which
    // hold its network namespace) are closed when the jail ends.
    EXPECT_EQ(sockets.front(), sockets.back())
        << "brig-server's sockets after each exec call: " << ::testing::PrintToString(sockets);
    // End of input ends brig; its spawner and worker die with it and come
    // to this subreaper, which reaps them before the leftover checks.
    client.close_write();
    EXPECT_TRUE(server.wait());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (::waitpid(-1, nullptr, WNOHANG) >= 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(st::result_stream(replies[0], "stdout"), "small-content\n") << replies[0].dump();
  EXPECT_THAT(st::result_stream(replies[1], "stdout"), HasSubstr("direct=7")) << replies[1].dump();
  EXPECT_EQ(st::result_stream(replies[2], "stdout"), "403\n") << replies[2].dump();
  EXPECT_EQ(web_->requests_for("/small"), 1u);

  // One line per decision: the allowed request and the refused one, each
  // with its host, port and the rule that decided it.
  std::vector<Json> egress;
  std::istringstream in(read_host_file(audit));
  for (std::string line; std::getline(in, line);) {
    const Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "egress") egress.push_back(j);
  }
  const int port = web_->port();
  auto find = [&](const std::string& host) -> std::optional<Json> {
    for (const Json& j : egress)
      if (j.value("host", "") == host && j.value("port", 0) == port) return j;
    return std::nullopt;
  };
  const auto allowed = find("web.test");
  ASSERT_TRUE(allowed) << read_host_file(audit);
  EXPECT_EQ(allowed->value("allowed", false), true) << allowed->dump();
  EXPECT_EQ(allowed->value("rule", ""), "web.test:" + std::to_string(port)) << allowed->dump();
  const auto refused = find("other.test");
  ASSERT_TRUE(refused) << read_host_file(audit);
  EXPECT_EQ(refused->value("allowed", true), false) << refused->dump();
  EXPECT_NE(refused->value("rule", ""), "") << refused->dump();
}

}  // namespace
}  // namespace brig::security::test
