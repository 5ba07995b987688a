// Network mode `filtered` end to end: a veth into the jail (`eth0`, a
// default route through the host end, named `brig…`), the host masquerading,
// and nftables in the jail's own namespace letting out only the addresses
// and ports the policy allows (TCP and UDP; deny first; names resolved at
// the start), with brig's proxy and DNS stub still on the jail's loopback
// for wildcard names. Root (or CAP_NET_ADMIN) only.
//
// Only networks this test makes are used (tests/security/netns_hosts.h):
// brig runs in a private "host" namespace, the servers sit in an
// "upstream" namespace behind it at 10.77.0.2-4. Each refusal is paired
// with an allowed request in the same jail, and every server counts what
// reached it, so no test passes because something else broke.
//
// Runs as root and as an unprivileged user (scripts/test.sh): as root the
// jails run; unprivileged, brig must refuse the mode and run nothing.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/security/egress_servers.h"
#include "tests/security/netns_hosts.h"
#include "tests/security/security_support.h"
#include "tests/server/test_support.h"

namespace brig::security::test {
namespace {

using jail::test::lines;
using Json = server::testing::Json;
using ::testing::Contains;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Lt;
using ::testing::Not;
using ::testing::StartsWith;

// Every server's answer names the server, so a test sees who answered.
std::string page(const std::string& addr, int port) {
  return "page " + addr + ":" + std::to_string(port) + "\n";
}

// The ports of the upstream namespace.
constexpr int kWebPort = 80;         // HTTP on .2, .3 and .4
constexpr int kOtherWebPort = 8080;  // HTTP on .2 that no policy allows
constexpr int kTcpTallyPort = 7000;  // TCP on .2 that no policy allows
constexpr int kUdpAllowed = 9999;    // UDP on .2, allowed by address
constexpr int kUdpRefused = 9998;    // UDP on .2, not allowed
constexpr int kHostPort = 7001;      // TCP on every address of the host namespace

// The test policy: one address and port (TCP and UDP), one name from
// `hosts` (an address allowed by no other rule), and a wildcard whose
// address only the proxy may reach. `extra_allow`: more entries for
// `allow`, each written `, "rule"`.
std::string filtered_policy(const std::string& extra_allow = "") {
  return "extends = \"default\"\n"
         "[network]\n"
         "mode = \"filtered\"\n"
         "allow = [\"10.77.0.2:80\", \"10.77.0.2:9999\", \"web.test:80\", \"*.wild.test:80\"" +
         extra_allow +
         "]\n"
         "hosts = { \"web.test\" = \"10.77.0.3\", \"a.wild.test\" = \"10.77.0.4\" }\n";
}

// A curl inside the jail, direct (no proxy), bounded: a dropped SYN shows as
// a timeout (28), a refused connect as 7.
std::string direct_curl(const std::string& url) {
  return "curl -sS --noproxy '*' --connect-timeout 8 --max-time 15 " + url;
}

// A jail step whose last line says how it ended: `<tag>=<exit status>`.
std::string step(const std::string& tag, const std::string& command) {
  return command + "; echo " + tag + "=$?\n";
}

// step() that also prints `<tag>_ms=<milliseconds it took>`.
std::string timed(const std::string& tag, const std::string& command) {
  return "s=$(date +%s%N); " + command + "; r=$?; echo " + tag + "=$r; echo " + tag +
         "_ms=$(( ($(date +%s%N) - s) / 1000000 ))\n";
}

// The milliseconds timed(tag) printed; -1 if none.
long long ms_of(const std::string& out, const std::string& tag) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("(^|\n)" + tag + "_ms=([0-9]+)"))) return -1;
  return std::stoll(m[2]);
}

// bash: the jail's default gateway (the veth's host end) into $gw, from
// /proc/net/route (little-endian hex), printed as `gw=<address>`.
const std::string kGateway =
    "while read -r i d g rest; do [ \"$d\" = 00000000 ] && gh=$g; done < /proc/net/route\n"
    "gw=$(printf '%d.%d.%d.%d' 0x${gh:6:2} 0x${gh:4:2} 0x${gh:2:2} 0x${gh:0:2}); echo gw=$gw\n";

// The first line every jail_sh() script prints: the command ran.
const std::string kStarted = "jail-started";
bool started(const BrigRan& ran) {
  return ran.out.starts_with(kStarted + "\n");
}

// The interface names `ip -o link` lists.
std::vector<std::string> link_names(const std::string& ip_o_link) {
  std::vector<std::string> names;
  for (const std::string& l : lines(ip_o_link)) {
    // "3: name@ifN: <...>" or "1: lo: <...>"
    const size_t a = l.find(": ");
    if (a == std::string::npos) continue;
    const size_t b = l.find_first_of(":@", a + 2);
    names.push_back(l.substr(a + 2, b - a - 2));
  }
  return names;
}

std::vector<std::string> brig_links(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names)
    if (n.starts_with("brig")) out.push_back(n);
  return out;
}

std::string read_host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_host_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Reaps the children that come to this subreaper (a jail's init that
// `brig run` or `brig serve` left to exit by itself) until none is left.
void reap_orphans() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::waitpid(-1, nullptr, WNOHANG) >= 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

class FilteredTest : public SecurityTest {
 protected:
  void SetUp() override {
    SecurityTest::SetUp();
    if (HasFatalFailure()) return;
    if (::geteuid() != 0)
      GTEST_SKIP() << "filtered needs root (or CAP_NET_ADMIN), and so does this test's private "
                      "network; FilteredUnprivilegedTest covers the refusal";
    net_.emplace();
    ASSERT_EQ(net_->error(), "");
    {
      InNetns up(net_->upstream_ns());
      ASSERT_TRUE(up.ok());
      for (const char* addr : {"10.77.0.2", "10.77.0.3", "10.77.0.4"})
        web_.emplace_back(
            std::make_unique<CountingHttpServer>(addr, kWebPort, page(addr, kWebPort)));
      other_web_.emplace("10.77.0.2", kOtherWebPort, page("10.77.0.2", kOtherWebPort));
      tcp_tally_.emplace(Tally::Kind::tcp, "10.77.0.2", kTcpTallyPort);
      udp_allowed_.emplace(Tally::Kind::udp, "10.77.0.2", kUdpAllowed);
      udp_refused_.emplace(Tally::Kind::udp, "10.77.0.2", kUdpRefused);
    }
    // From here to TearDown this thread, and every process it starts
    // (brig run, brig serve, ip, nft), is in the host namespace.
    in_host_.emplace(net_->host_ns());
    ASSERT_TRUE(in_host_->ok());
    host_tally_.emplace(Tally::Kind::tcp, "0.0.0.0", kHostPort);
    for (const auto& w : web_) ASSERT_TRUE(w->ok()) << w->error();
    ASSERT_TRUE(other_web_->ok()) << other_web_->error();
    ASSERT_TRUE(tcp_tally_->ok()) << tcp_tally_->error();
    ASSERT_TRUE(udp_allowed_->ok()) << udp_allowed_->error();
    ASSERT_TRUE(udp_refused_->ok()) << udp_refused_->error();
    ASSERT_TRUE(host_tally_->ok()) << host_tally_->error();
    policy_ = policy_file("filtered", filtered_policy());
  }

  void TearDown() override {
    in_host_.reset();
    host_tally_.reset();
    web_.clear();
    other_web_.reset();
    tcp_tally_.reset();
    udp_allowed_.reset();
    udp_refused_.reset();
    net_.reset();
    SecurityTest::TearDown();
  }

  // `brig run --policy <policy> -- /bin/bash -c SCRIPT` in the host namespace.
  BrigRan jail_sh(const std::string& script, const std::string& policy = "") {
    return brig_run({"--policy", policy.empty() ? policy_ : policy, "--", "/bin/bash", "-c",
                     "echo " + kStarted + "\n" + script});
  }

  // The web server on 10.77.0.<last>:80.
  CountingHttpServer& web(int last) { return *web_.at(static_cast<size_t>(last - 2)); }

  // The host namespace's interface names now.
  std::vector<std::string> host_links() {
    const HostRan r =
        host_command({"/usr/sbin/ip", "-o", "link"}, "/", {"PATH=/usr/sbin:/usr/bin"});
    EXPECT_TRUE(r.ok()) << r.output;
    return link_names(r.output);
  }

  // brig's links in the host namespace once none has gone for 10 s at
  // most: a namespace, with the veth in it, is destroyed asynchronously
  // after its last process and socket (docs/network.md, within
  // milliseconds).
  std::vector<std::string> brig_links_once_settled() {
    std::vector<std::string> left = brig_links(host_links());
    server::testing::wait_until(
        [&] {
          left = brig_links(host_links());
          return left.empty();
        },
        std::chrono::seconds(10));
    return left;
  }

  // `nft ARGS` in the host namespace; its output.
  std::string host_nft(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/sbin/nft");
    const HostRan r = host_command(args, "/", {"PATH=/usr/sbin:/usr/bin"});
    EXPECT_TRUE(r.ok()) << r.output;
    return r.output;
  }

  std::optional<TestNetwork> net_;
  std::optional<InNetns> in_host_;
  std::vector<std::unique_ptr<CountingHttpServer>> web_;  // 10.77.0.2, .3, .4 on :80
  std::optional<CountingHttpServer> other_web_;           // 10.77.0.2:8080
  std::optional<Tally> tcp_tally_;                        // 10.77.0.2:7000
  std::optional<Tally> udp_allowed_;                      // 10.77.0.2:9999
  std::optional<Tally> udp_refused_;                      // 10.77.0.2:9998
  std::optional<Tally> host_tally_;                       // the host namespace's *:7001
  std::string policy_;
};

// The fixture itself, before any jail: the host namespace reaches every
// upstream server through the veth, and the servers count and see the peer.
TEST_F(FilteredTest, TheTestNetworkCarriesTheHostNamespacesTraffic) {
  EXPECT_EQ(net_->ip_forward(), "1");
  for (int last : {2, 3, 4}) {
    const std::string addr = "10.77.0." + std::to_string(last);
    const HostRan r = host_command(
        {"/usr/bin/curl", "-sS", "--noproxy", "*", "--max-time", "10", "http://" + addr + "/"}, "/",
        {"PATH=/usr/bin:/bin"});
    EXPECT_TRUE(r.ok()) << r.output;
    EXPECT_EQ(r.output, page(addr, kWebPort));
    EXPECT_EQ(web(last).requests(), 1u);
    EXPECT_THAT(web(last).peers(), ::testing::ElementsAre(TestNetwork::kHostAddr));
  }
  const HostRan udp =
      host_command({"/bin/bash", "-c",
                    "echo x > /dev/udp/10.77.0.2/" + std::to_string(kUdpRefused) +
                        " && exec 3<>/dev/tcp/10.77.0.2/" + std::to_string(kTcpTallyPort)},
                   "/", {"PATH=/usr/bin:/bin"});
  EXPECT_TRUE(udp.ok()) << udp.output;
  EXPECT_TRUE(server::testing::wait_until([&] { return udp_refused_->arrivals() == 1; }));
  EXPECT_TRUE(server::testing::wait_until([&] { return tcp_tally_->arrivals() == 1; }));
  // The machine's own network is not this one.
  EXPECT_THAT(host_links(), ::testing::UnorderedElementsAre("lo", TestNetwork::kUpstreamLink));
}

TEST_F(FilteredTest, ADirectConnectionReachesTheAllowedPortOnlyAndARefusalIsImmediate) {
  const BrigRan ran = jail_sh(
      timed("refused", direct_curl("http://10.77.0.2:" + std::to_string(kOtherWebPort) + "/")) +
      timed("raw", "(exec 3<>/dev/tcp/10.77.0.2/" + std::to_string(kTcpTallyPort) + ")") +
      step("allowed", direct_curl("http://10.77.0.2/")));
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  // EPERM from the jail's output chain: curl's "could not connect", at once,
  // not a dropped SYN's timeout.
  EXPECT_THAT(l, Contains("refused=7")) << ran.out << ran.err;
  EXPECT_THAT(ms_of(ran.out, "refused"), Lt(3000)) << ran.out;
  EXPECT_THAT(l, Not(Contains("raw=0"))) << ran.out << ran.err;
  EXPECT_THAT(ms_of(ran.out, "raw"), Lt(3000)) << ran.out;
  EXPECT_EQ(other_web_->connections(), 0u) << "a refused port was reached";
  EXPECT_EQ(tcp_tally_->arrivals(), 0u) << "a refused port was reached";
  // Control: the allowed address and port, masqueraded as the host namespace.
  EXPECT_THAT(l, Contains("allowed=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("page 10.77.0.2:80"));
  EXPECT_EQ(web(2).requests(), 1u);
  EXPECT_THAT(web(2).peers(), ::testing::ElementsAre(TestNetwork::kHostAddr));
}

TEST_F(FilteredTest, AHostsNameAllowedByNameResolvesToItsAddressAndIsReachedDirectly) {
  const BrigRan ran = jail_sh(
      step("web", "getent hosts web.test") + step("other", "getent hosts other.test") +
      step("named", direct_curl("http://web.test/")) +
      // web.test's address on another port, and another address
      // (a.wild.test's, allowed only through the proxy): neither is
      // in the kernel's rules.
      timed("port", direct_curl("http://10.77.0.3:" + std::to_string(kOtherWebPort) + "/")) +
      timed("wild_direct", direct_curl("http://10.77.0.4/")));
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  // The stub answers the allowed name with the address in the rules, and
  // nothing else.
  EXPECT_THAT(ran.out, ContainsRegex("(^|\n)10\\.77\\.0\\.3[ \t]+web\\.test\n"))
      << ran.out << ran.err;
  EXPECT_THAT(l, Contains("web=0"));
  // getent: 2 is "not found".
  EXPECT_THAT(l, Contains("other=2")) << ran.out << ran.err;
  EXPECT_THAT(ran.out, Not(HasSubstr("other.test\n")));
  EXPECT_THAT(l, Contains("named=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("page 10.77.0.3:80"));
  EXPECT_EQ(web(3).requests(), 1u);
  EXPECT_THAT(l, Contains("port=7")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("wild_direct=7")) << ran.out << ran.err;
  EXPECT_THAT(ms_of(ran.out, "wild_direct"), Lt(3000)) << ran.out;
  EXPECT_EQ(web(4).connections(), 0u) << "an address allowed only through the proxy was reached";
}

TEST_F(FilteredTest, ACidrAllowReachesEveryAddressInItAndADenyWinsOverIt) {
  const std::string cidr = policy_file("cidr",
                                       "extends = \"default\"\n[network]\nmode = \"filtered\"\n"
                                       "allow = [\"10.77.0.0/24:80\"]\n");
  const BrigRan ran = jail_sh(
      step("two", direct_curl("http://10.77.0.2/")) +
          step("three", direct_curl("http://10.77.0.3/")) +
          timed("port", direct_curl("http://10.77.0.2:" + std::to_string(kOtherWebPort) + "/")),
      cidr);
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("two=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("three=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("page 10.77.0.3:80"));
  // The CIDR names port 80 only.
  EXPECT_THAT(l, Contains("port=7")) << ran.out << ran.err;
  EXPECT_EQ(other_web_->connections(), 0u);
  EXPECT_EQ(web(3).requests(), 1u);

  const std::string denied = policy_file("cidr-deny",
                                         "extends = \"default\"\n[network]\nmode = \"filtered\"\n"
                                         "allow = [\"10.77.0.0/24:80\"]\ndeny = [\"10.77.0.3\"]\n");
  const BrigRan ran2 = jail_sh(timed("three", direct_curl("http://10.77.0.3/")) +
                                   step("two", direct_curl("http://10.77.0.2/")) +
                                   step("four", direct_curl("http://10.77.0.4/")),
                               denied);
  ASSERT_TRUE(started(ran2)) << "brig run did not run the command: " << ran2.err;
  l = lines(ran2.out);
  EXPECT_THAT(l, Contains("three=7")) << ran2.out << ran2.err;
  EXPECT_THAT(ms_of(ran2.out, "three"), Lt(3000)) << ran2.out;
  EXPECT_EQ(web(3).requests(), 1u) << "the denied address was reached";
  // Control: the rest of the CIDR, in the same jail.
  EXPECT_THAT(l, Contains("two=0")) << ran2.out << ran2.err;
  EXPECT_THAT(l, Contains("four=0")) << ran2.out << ran2.err;
  EXPECT_EQ(web(2).requests(), 2u);
  EXPECT_EQ(web(4).requests(), 1u);
}

TEST_F(FilteredTest, ADeniedNameOrMappedAddressIsRefusedUnderACidrAllow) {
  // deny by name: the name's address (from `hosts`) is dropped, whatever
  // allows it; deny by an IPv4-mapped IPv6 address: the IPv4 address it
  // carries, as the proxy reads it.
  const std::string policy = policy_file("deny-forms",
                                         "extends = \"default\"\n[network]\nmode = \"filtered\"\n"
                                         "allow = [\"10.77.0.0/24:80\"]\n"
                                         "deny = [\"web.test\", \"::ffff:10.77.0.4\"]\n"
                                         "hosts = { \"web.test\" = \"10.77.0.3\" }\n");
  const BrigRan ran = jail_sh(timed("named", direct_curl("http://10.77.0.3/")) +
                                  timed("mapped", direct_curl("http://10.77.0.4/")) +
                                  step("allowed", direct_curl("http://10.77.0.2/")),
                              policy);
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("named=7")) << ran.out << ran.err;
  EXPECT_THAT(ms_of(ran.out, "named"), Lt(3000)) << ran.out;
  EXPECT_THAT(l, Contains("mapped=7")) << ran.out << ran.err;
  EXPECT_THAT(ms_of(ran.out, "mapped"), Lt(3000)) << ran.out;
  EXPECT_EQ(web(3).connections(), 0u) << "the address of a denied name was reached";
  EXPECT_EQ(web(4).connections(), 0u) << "a denied (IPv4-mapped) address was reached";
  // Control: the rest of the CIDR, in the same jail.
  EXPECT_THAT(l, Contains("allowed=0")) << ran.out << ran.err;
  EXPECT_EQ(web(2).requests(), 1u);
}

TEST_F(FilteredTest, UnderStrictLandlocksTcpRuleLetsTheAllowedPortsThroughOnly) {
  // strict: loopback_servers = false, so Landlock's TCP rule refuses every
  // connect but the ones filtered needs (the proxy, DNS, the allowed ports).
  const std::string policy = policy_file("strict-filtered",
                                         "extends = \"strict\"\n[network]\nmode = \"filtered\"\n"
                                         "allow = [\"10.77.0.2:80\", \"web.test:80\"]\n"
                                         "hosts = { \"web.test\" = \"10.77.0.3\" }\n");
  const BrigRan ran = jail_sh(
      step("direct", direct_curl("http://10.77.0.2/")) +
          step("proxied", "curl -sS --max-time 15 -w 'proxied=%{http_code}\\n' http://web.test/") +
          step("refused", direct_curl("http://10.77.0.2:" + std::to_string(kOtherWebPort) + "/")),
      policy);
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("direct=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("page 10.77.0.2:80"));
  EXPECT_THAT(l, Contains("proxied=200")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("page 10.77.0.3:80"));
  EXPECT_THAT(l, Not(Contains("refused=0"))) << ran.out << ran.err;
  EXPECT_EQ(other_web_->connections(), 0u);
}

TEST_F(FilteredTest, UdpArrivesOnlyAtAnAllowedAddressAndPort) {
  const BrigRan ran =
      jail_sh(step("refused", "echo refused > /dev/udp/10.77.0.2/" + std::to_string(kUdpRefused)) +
              step("allowed", "echo allowed > /dev/udp/10.77.0.2/" + std::to_string(kUdpAllowed)) +
              // The allow entry is an address and a port: it names TCP too.
              step("tcp", "(exec 3<>/dev/tcp/10.77.0.2/" + std::to_string(kUdpAllowed) + ")"));
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Not(Contains("refused=0"))) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("allowed=0")) << ran.out << ran.err;
  // The allowed datagram went out after the refused one: once it is here,
  // the other would be too.
  EXPECT_TRUE(server::testing::wait_until([&] { return udp_allowed_->arrivals() == 1; }))
      << "the allowed datagram never arrived";
  EXPECT_EQ(udp_refused_->arrivals(), 0u) << "a datagram to a refused port arrived";
  // Nothing listens on TCP 9999 upstream: the kernel rule let the SYN out
  // and the upstream answered RST (connection refused, bash's status 1),
  // where a refused port fails with EPERM.
  EXPECT_THAT(l, Contains("tcp=1")) << ran.out << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("Connection refused")) << ran.err;
}

TEST_F(FilteredTest, TheJailCannotUndoItsRules) {
  const std::string refused =
      direct_curl("http://10.77.0.2:" + std::to_string(kOtherWebPort) + "/");
  const BrigRan ran = jail_sh(
      // The tools are there: a failure below is a refusal, not a missing program.
      step("have_nft", "test -x /usr/sbin/nft") + step("have_ip", "test -x /usr/sbin/ip") +
      step("show", "/usr/sbin/ip -4 -o addr show dev eth0") +
      step("flush", "/usr/sbin/nft flush ruleset") +
      step("delete", "/usr/sbin/nft delete table inet brig") +
      step("accept", "/usr/sbin/nft add rule inet brig output accept") +
      step("down", "/usr/sbin/ip link set eth0 down") +
      step("addr", "/usr/sbin/ip addr add 10.77.0.9/24 dev eth0") +
      step("route", "/usr/sbin/ip route add 10.77.0.0/24 dev eth0") +
      step("link", "/usr/sbin/ip link add x0 type dummy") + timed("after", refused) +
      step("allowed", direct_curl("http://10.77.0.2/")));
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("have_nft=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("have_ip=0")) << ran.out << ran.err;
  // Control: ip runs and reads the jail's interface (its 10.213.x.2).
  EXPECT_THAT(l, Contains("show=0")) << ran.out << ran.err;
  EXPECT_THAT(ran.out, ContainsRegex("eth0 +inet 10\\.213\\.[0-9]+\\.[0-9]+/30")) << ran.out;
  for (const char* attack : {"flush", "delete", "accept", "down", "addr", "route", "link"})
    EXPECT_THAT(l, Not(Contains(std::string(attack) + "=0"))) << attack << "\n"
                                                              << ran.out << ran.err;
  EXPECT_THAT(l, Contains("after=7")) << ran.out << ran.err;
  EXPECT_THAT(ms_of(ran.out, "after"), Lt(3000)) << ran.out;
  EXPECT_EQ(other_web_->connections(), 0u);
  EXPECT_THAT(l, Contains("allowed=0")) << ran.out << ran.err;
  EXPECT_EQ(web(2).requests(), 1u);
}

TEST_F(FilteredTest, TheHostNamespaceItselfIsOutOfReach) {
  // 10.77.0.1:7001 allowed by the jail's own rules: the host namespace's
  // input chain must still drop what comes from a brig veth.
  const std::string policy =
      policy_file("host", filtered_policy(", \"" + std::string(TestNetwork::kHostAddr) + ":" +
                                          std::to_string(kHostPort) + "\""));
  const std::string port = std::to_string(kHostPort);
  const BrigRan ran = jail_sh(
      kGateway + step("host", "timeout 5 bash -c 'exec 3<>/dev/tcp/10.77.0.1/" + port + "'") +
          step("gateway", "timeout 5 bash -c \"exec 3<>/dev/tcp/$gw/" + port + "\"") +
          step("allowed", direct_curl("http://10.77.0.2/")),
      policy);
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(ran.out, ContainsRegex("(^|\n)gw=10\\.213\\.[0-9]+\\.[0-9]+\n"))
      << ran.out << ran.err;
  EXPECT_THAT(l, Not(Contains("host=0"))) << ran.out << ran.err;
  EXPECT_THAT(l, Not(Contains("gateway=0"))) << ran.out << ran.err;
  EXPECT_EQ(host_tally_->arrivals(), 0u) << "the jail reached the host namespace's own listener";
  // Control, in the same jail.
  EXPECT_THAT(l, Contains("allowed=0")) << ran.out << ran.err;
  EXPECT_EQ(web(2).requests(), 1u);
  // Control: the listener counts (this thread is in the host namespace).
  const HostRan here = host_command({"/bin/bash", "-c", "exec 3<>/dev/tcp/10.77.0.1/" + port}, "/",
                                    {"PATH=/usr/bin:/bin"});
  EXPECT_TRUE(here.ok()) << here.output;
  EXPECT_EQ(host_tally_->arrivals(), 1u);
}

TEST_F(FilteredTest, NoIpv6LeavesTheJail) {
  // The veth carries IPv4 alone: IPv6 (here link-local multicast to every
  // node on the jail's link, the host end included) is refused in the jail.
  Tally udp6(Tally::Kind::udp, "::", kHostPort);
  ASSERT_TRUE(udp6.ok()) << udp6.error();
  const std::string port = std::to_string(kHostPort);
  const BrigRan ran = jail_sh(
      // Once eth0's link-local address is usable (duplicate address
      // detection over), so that a refusal is not for want of a source.
      "for i in $(seq 100); do /usr/sbin/ip -6 addr show dev eth0 | grep -q tentative || break; "
      "sleep 0.1; done\n/usr/sbin/ip -6 -o addr show dev eth0\n" +
      step("v6", "echo x > /dev/udp/ff02::1%eth0/" + port) +
      step("allowed", direct_curl("http://10.77.0.2/")));
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(ran.out, Not(HasSubstr("tentative"))) << ran.out;
  EXPECT_THAT(l, Not(Contains("v6=0"))) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("allowed=0")) << ran.out << ran.err;
  EXPECT_EQ(udp6.arrivals(), 0u) << "an IPv6 datagram from the jail reached the host namespace";
  // Control: the listener counts (this thread is in the host namespace).
  const HostRan here = host_command({"/bin/bash", "-c", "echo x > /dev/udp/::1/" + port}, "/",
                                    {"PATH=/usr/bin:/bin"});
  EXPECT_TRUE(here.ok()) << here.output;
  EXPECT_TRUE(server::testing::wait_until([&] { return udp6.arrivals() == 1; }));
}

TEST_F(FilteredTest, TheProxyStillServesAllowedNamesAndWildcards) {
  const BrigRan ran = jail_sh(
      step("env", "test \"$HTTP_PROXY\" = http://127.0.0.1:3128") +
      // curl reads http_proxy: through brig's proxy.
      step("named", "curl -sS --max-time 15 -w 'named=%{http_code}\\n' http://web.test/") +
      step("wild", "curl -sS --max-time 15 -w 'wild=%{http_code}\\n' http://a.wild.test/") +
      step("unlisted",
           "curl -sS --max-time 15 -o /dev/null -w 'unlisted=%{http_code}\\n' http://other.test/"));
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("env=0")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("named=200")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("page 10.77.0.3:80"));
  // The wildcard: not in the kernel's rules (AHostsName… shows its address
  // refused direct), served by the proxy.
  EXPECT_THAT(l, Contains("wild=200")) << ran.out << ran.err;
  EXPECT_THAT(l, Contains("page 10.77.0.4:80"));
  EXPECT_THAT(l, Contains("unlisted=403")) << ran.out << ran.err;
  EXPECT_EQ(web(3).requests(), 1u);
  EXPECT_EQ(web(4).requests(), 1u);
}

TEST_F(FilteredTest, NothingIsLeftBehindAndTheNextJailsWorkOneAfterAnotherAndTogether) {
  const auto before = host_links();
  EXPECT_THAT(brig_links(before), IsEmpty());
  const BrigRan first = jail_sh(step("first", direct_curl("http://10.77.0.2/")));
  ASSERT_TRUE(started(first)) << "brig run did not run the command: " << first.err;
  EXPECT_THAT(lines(first.out), Contains("first=0")) << first.out << first.err;
  // The jail's veth is gone with it; the host keeps brig's one shared table.
  EXPECT_THAT(brig_links_once_settled(), IsEmpty());
  EXPECT_THAT(lines(host_nft({"list", "tables"})),
              ::testing::ElementsAre("table inet brig_filtered"));
  const std::string ruleset = host_nft({"-s", "list", "ruleset"});

  const BrigRan second = jail_sh(step("second", direct_curl("http://10.77.0.2/")) +
                                 timed("refused", direct_curl("http://10.77.0.2:8080/")));
  ASSERT_TRUE(started(second)) << "brig run did not run the command: " << second.err;
  EXPECT_THAT(lines(second.out), Contains("second=0")) << second.out << second.err;
  EXPECT_THAT(lines(second.out), Contains("refused=7")) << second.out << second.err;
  EXPECT_THAT(brig_links_once_settled(), IsEmpty());
  EXPECT_EQ(host_nft({"-s", "list", "ruleset"}), ruleset) << "the host's rules grew with a jail";

  // Two at once: each its own veth and addresses, both reach the server.
  std::vector<HostRan> together(2);
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < together.size(); ++i)
      threads.emplace_back([&, i] {
        // A thread started here is in the host namespace too.
        together[i] = host_command(
            {jail::test::bin_dir() + "/brig", "run", "--policy", policy_, "--", "/bin/bash", "-c",
             kGateway + "sleep 1\n" + step("both", direct_curl("http://10.77.0.2/"))},
            workspace(), {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home()},
            std::chrono::seconds(90));
      });
    for (std::thread& t : threads) t.join();
  }
  reap_orphans();
  for (const HostRan& r : together) EXPECT_THAT(lines(r.output), Contains("both=0")) << r.output;
  EXPECT_EQ(web(2).requests(), 4u);
  EXPECT_THAT(brig_links_once_settled(), IsEmpty());
  EXPECT_EQ(host_nft({"-s", "list", "ruleset"}), ruleset) << "the host's rules grew with a jail";
}

TEST_F(FilteredTest, OneJailCannotReachAnotherEvenWhereItsRulesAllow) {
  // Jail A counts the datagrams reaching UDP 8000 on its eth0 address for a
  // while; jail B, whose own rules let out anything to 10.213.0.0/16:8000,
  // sends to it, and so does the upstream. Nothing of theirs may arrive (the
  // host's forward chain, and A's own input chain, which takes only replies).
  write_host_file(workspace() + "/listen.py",
                  "import socket, sys, time\n"
                  "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                  "s.bind(('0.0.0.0', 8000))\n"
                  "s.settimeout(0.5)\n"
                  "open('a-ready', 'w').close()\n"
                  "end = time.time() + float(sys.argv[1])\n"
                  "while time.time() < end:\n"
                  "    try:\n"
                  "        d, _ = s.recvfrom(100)\n"
                  "        print('got=' + d.decode().strip(), flush=True)\n"
                  "    except socket.timeout:\n"
                  "        pass\n");
  ASSERT_EQ(::chmod((workspace() + "/listen.py").c_str(), 0644), 0);
  HostRan a;
  std::thread jail_a([&] {
    // A thread started here is in the host namespace too.
    a = host_command(
        {jail::test::bin_dir() + "/brig", "run", "--policy", policy_, "--", "/bin/bash", "-c",
         "x=$(/usr/sbin/ip -4 -o addr show dev eth0); x=${x#*inet }; x=${x%%/*}\n"
         "python3 listen.py 8 &\n"
         "for i in $(seq 100); do [ -e a-ready ] && break; sleep 0.1; done\n"
         // Control: the listener counts (A to its own address, over lo).
         "echo from-self > /dev/udp/$x/8000\n"
         "echo $x > a-addr.tmp && mv a-addr.tmp a-addr\n"
         "wait\n"},
        workspace(), {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home()},
        std::chrono::seconds(60));
  });
  const bool ready = server::testing::wait_until(
      [&] { return std::filesystem::exists(workspace() + "/a-addr"); }, std::chrono::seconds(30));
  std::string addr = read_host_file(workspace() + "/a-addr");
  while (!addr.empty() && addr.back() == '\n') addr.pop_back();
  // While A runs, its veth's host end is there (so the checks that none is
  // left after a jail are not vacuous).
  const std::vector<std::string> during = brig_links(host_links());
  BrigRan b;
  HostRan upstream;
  if (ready) {
    const std::string policy = policy_file("jail-b", filtered_policy(", \"10.213.0.0/16:8000\""));
    b = jail_sh(step("b", "for i in 1 2 3; do echo from-b > /dev/udp/" + addr + "/8000; done") +
                    step("allowed", direct_curl("http://10.77.0.2/")),
                policy);
    // And from outside: the upstream's default route leads to the host.
    upstream =
        net_->in_upstream({"/bin/bash", "-c", "echo from-upstream > /dev/udp/" + addr + "/8000"});
  }
  jail_a.join();
  reap_orphans();
  ASSERT_TRUE(ready) << "jail A did not start listening: " << a.output;
  EXPECT_THAT(during, Not(IsEmpty())) << "no brig veth in the host namespace while a jail runs";
  EXPECT_THAT(brig_links_once_settled(), IsEmpty());
  EXPECT_THAT(addr, StartsWith("10.213.")) << a.output;
  ASSERT_TRUE(started(b)) << "brig run did not run jail B: " << b.err;
  EXPECT_THAT(lines(a.output), Contains("got=from-self")) << a.output;
  EXPECT_THAT(lines(a.output), Not(Contains("got=from-b")))
      << a.output << "\nB: " << b.out << b.err;
  EXPECT_TRUE(upstream.ok()) << upstream.output;
  EXPECT_THAT(lines(a.output), Not(Contains("got=from-upstream"))) << a.output;
  // Control in B: the upstream is reachable.
  EXPECT_THAT(lines(b.out), Contains("allowed=0")) << b.out << b.err;
}

TEST_F(FilteredTest, ALinkNamedLikeBrigsIsNeitherInTheWayNorRemoved) {
  // Someone else's interface, or one a crashed brig left, under the names
  // brig gives its veths' host ends.
  // (veths: this kernel may have no dummy links)
  const HostRan made = net_->host_sh(
      "ip link add brig0 type veth peer name other0 && ip link add brigf0 type veth peer name "
      "other1 && ip link add brigf1 type veth peer name other2");
  ASSERT_TRUE(made.ok()) << made.output;
  const BrigRan ran = jail_sh(step("allowed", direct_curl("http://10.77.0.2/")));
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  EXPECT_THAT(lines(ran.out), Contains("allowed=0")) << ran.out << ran.err;
  // The jail's own veth goes (asynchronously); the others stay.
  std::vector<std::string> left;
  server::testing::wait_until(
      [&] {
        left = brig_links(host_links());
        return left.size() <= 3;
      },
      std::chrono::seconds(10));
  EXPECT_THAT(left, ::testing::UnorderedElementsAre("brig0", "brigf0", "brigf1"));
}

TEST_F(FilteredTest, KillingBrigRunLeavesNoVethBehind) {
  const std::vector<std::string> argv = {
      jail::test::bin_dir() + "/brig",           "run", "--policy", policy_, "--", "/bin/sh", "-c",
      "echo up > up; sleep 60; echo " + marker()};
  const std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home()};
  std::vector<char*> cargv, cenv;
  std::vector<std::string> a = argv, e = env;
  for (auto& s : a) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  for (auto& s : e) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  const std::string cwd = workspace();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(null, 1) < 0 || ::chdir(cwd.c_str()) != 0)
      ::_exit(120);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(121);
  }
  const bool up = server::testing::wait_until(
      [&] { return std::filesystem::exists(workspace() + "/up"); }, std::chrono::seconds(30));
  const std::vector<std::string> during = brig_links(host_links());
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_TRUE(up) << "the jail did not start";
  EXPECT_THAT(during, Not(IsEmpty()));
  // The jail dies with brig run, and its namespace with the veth in it.
  EXPECT_THAT(brig_links_once_settled(), IsEmpty());
  reap_orphans();
  // The next jail works.
  const BrigRan ran = jail_sh(step("allowed", direct_curl("http://10.77.0.2/")));
  ASSERT_TRUE(started(ran)) << "brig run did not run the command: " << ran.err;
  EXPECT_THAT(lines(ran.out), Contains("allowed=0")) << ran.out << ran.err;
}

TEST_F(FilteredTest, ServeExecHoldsTheSameRules) {
  namespace st = server::testing;
  std::vector<Json> replies;
  {
    // brig-server, its spawner and the jails in the host namespace.
    st::Child server(
        {jail::test::bin_dir() + "/brig", "serve", "--workspace", workspace(), "--policy", policy_},
        st::Child::Options{.cwd = workspace()});
    st::LineClient client = server.take_client();
    ASSERT_TRUE(st::initialize(client));
    const std::vector<std::string> commands = {
        direct_curl("http://10.77.0.2/"),
        step("refused", direct_curl("http://10.77.0.2:" + std::to_string(kOtherWebPort) + "/")),
        "getent hosts web.test",
        "curl -sS --max-time 15 http://a.wild.test/",
        // exec's shell may not be bash, which has /dev/udp.
        "bash -c 'echo x > /dev/udp/10.77.0.2/" + std::to_string(kUdpRefused) +
            "; echo x > /dev/udp/10.77.0.2/" + std::to_string(kUdpAllowed) + "'",
    };
    int id = 1;
    for (const std::string& command : commands) {
      ASSERT_TRUE(client.send(st::tool_call(id, "exec", {{"command", command}})));
      const auto reply = client.read_response(id++, nullptr, std::chrono::seconds(60));
      ASSERT_TRUE(reply) << command;
      replies.push_back((*reply)["result"]);
    }
    client.close_write();
    EXPECT_TRUE(server.wait());
    reap_orphans();
  }
  ASSERT_EQ(replies.size(), 5u);
  EXPECT_EQ(st::result_stream(replies[0], "stdout"), page("10.77.0.2", kWebPort))
      << replies[0].dump();
  EXPECT_THAT(st::result_stream(replies[1], "stdout"), HasSubstr("refused=7")) << replies[1].dump();
  EXPECT_THAT(st::result_stream(replies[2], "stdout"),
              ContainsRegex("^10\\.77\\.0\\.3[ \t]+web\\.test"))
      << replies[2].dump();
  EXPECT_EQ(st::result_stream(replies[3], "stdout"), page("10.77.0.4", kWebPort))
      << replies[3].dump();
  EXPECT_EQ(web(2).requests(), 1u);
  EXPECT_EQ(web(4).requests(), 1u);
  EXPECT_EQ(other_web_->connections(), 0u);
  EXPECT_TRUE(server::testing::wait_until([&] { return udp_allowed_->arrivals() == 1; }));
  EXPECT_EQ(udp_refused_->arrivals(), 0u);
  EXPECT_THAT(brig_links_once_settled(), IsEmpty());
}

TEST_F(FilteredTest, WithoutIpForwardingBrigRefusesAndRunsNothing) {
  ASSERT_TRUE(net_->set_ip_forward(false));
  const BrigRan ran = jail_sh("touch ran\n" + direct_curl("http://10.77.0.2/"));
  EXPECT_FALSE(started(ran)) << "the command ran: " << ran.out;
  EXPECT_NE(ran.status, 0) << ran.out << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("net.ipv4.ip_forward")) << ran.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() + "/ran")) << "the command ran";
  EXPECT_EQ(web(2).connections(), 0u);
  EXPECT_THAT(brig_links_once_settled(), IsEmpty());
  // Control: the same run with forwarding on.
  ASSERT_TRUE(net_->set_ip_forward(true));
  const BrigRan again = jail_sh("touch ran\n" + step("allowed", direct_curl("http://10.77.0.2/")));
  ASSERT_TRUE(started(again)) << "brig run did not run the command: " << again.err;
  EXPECT_THAT(lines(again.out), Contains("allowed=0")) << again.out << again.err;
  EXPECT_TRUE(std::filesystem::exists(workspace() + "/ran"));
}

TEST_F(FilteredTest, DoctorListsFilteredAsAvailable) {
  const HostRan r = host_command({jail::test::bin_dir() + "/brig", "doctor"}, workspace(),
                                 {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home()});
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_THAT(r.output, ContainsRegex("\n  filtered +available ")) << r.output;
}

// Unprivileged: brig refuses the mode before anything runs, and says why.
class FilteredUnprivilegedTest : public SecurityTest {
 protected:
  void SetUp() override {
    SecurityTest::SetUp();
    if (HasFatalFailure()) return;
    if (::geteuid() == 0)
      GTEST_SKIP() << "as root filtered is allowed (FilteredTest); scripts/test.sh runs this "
                      "suite again as an unprivileged user";
  }
};

TEST_F(FilteredUnprivilegedTest, BrigRunRefusesFilteredAndRunsNothing) {
  const std::string policy = policy_file("filtered", filtered_policy());
  const BrigRan ran = brig_run({"--policy", policy, "--", "/bin/sh", "-c", "touch ran"});
  EXPECT_NE(ran.status, 0) << ran.out << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("filtered")) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("root")) << ran.err;
  EXPECT_THAT(ran.err, HasSubstr("CAP_NET_ADMIN")) << ran.err;
  // The remedy: a mode that needs no privilege.
  EXPECT_THAT(ran.err, HasSubstr("proxy")) << ran.err;
  EXPECT_FALSE(std::filesystem::exists(workspace() + "/ran")) << "the command ran";
  // Control: the same command under the default policy runs.
  const BrigRan control = brig_run({"--", "/bin/sh", "-c", "touch ran"});
  EXPECT_EQ(control.status, 0) << control.err;
  EXPECT_TRUE(std::filesystem::exists(workspace() + "/ran"));
}

TEST_F(FilteredUnprivilegedTest, BrigServeRunsNothingUnderFiltered) {
  namespace st = server::testing;
  const std::string policy = policy_file("filtered", filtered_policy());
  st::Child server(
      {jail::test::bin_dir() + "/brig", "serve", "--workspace", workspace(), "--policy", policy},
      st::Child::Options{.cwd = workspace()});
  st::LineClient client = server.take_client();
  // Refused at start (the server says why and ends), or at the call (an
  // error naming the mode): either way, nothing runs.
  if (st::initialize(client)) {
    ASSERT_TRUE(client.send(st::tool_call(1, "exec", {{"command", "touch ran"}})));
    const auto reply = client.read_response(1, nullptr, std::chrono::seconds(60));
    ASSERT_TRUE(reply);
    EXPECT_THAT(reply->dump(), HasSubstr("filtered")) << reply->dump();
    client.close_write();
    EXPECT_TRUE(server.wait());
  } else {
    const std::string err = server.read_stderr();
    const auto status = server.wait();
    ASSERT_TRUE(status);
    EXPECT_FALSE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << err;
    EXPECT_THAT(err, HasSubstr("filtered")) << err;
    EXPECT_THAT(err, HasSubstr("CAP_NET_ADMIN")) << err;
  }
  reap_orphans();
  EXPECT_FALSE(std::filesystem::exists(workspace() + "/ran")) << "the command ran";
}

TEST_F(FilteredUnprivilegedTest, DoctorListsFilteredAsUnavailable) {
  const HostRan r = host_command({jail::test::bin_dir() + "/brig", "doctor"}, workspace(),
                                 {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home()});
  EXPECT_TRUE(r.ok()) << r.output;
  EXPECT_THAT(r.output, ContainsRegex("\n  filtered +UNAVAILABLE ")) << r.output;
}

}  // namespace
}  // namespace brig::security::test
