// A filtered jail's own table, as the kernel takes the netlink batch and
// as nft then lists it: loaded the way the network helper loads it, as root
// of a fresh user namespace in a fresh network namespace (so the test runs
// unprivileged too).
#include "jail/netfilter/jail_rules.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace brig::jail::netfilter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

NetFilter sample() {
  NetFilter f;
  f.allow = {{{10, 1, 2, 0}, 24, 5432, 5432}, {{203, 0, 113, 7}, 32, 443, 443}};
  f.deny = {{{10, 1, 2, 9}, 32, 1, 65535}};
  return f;
}

bool write_file(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

struct Loaded {
  int err = -1;         // load_batch's answer; -1: the namespace could not be made
  std::string listing;  // `nft list table inet brig` afterwards (when err is 0)
};

// In a child: new user and network namespaces, the batch, then nft's listing.
Loaded load_and_list(const NetFilter& filter) {
  const std::vector<char> batch = jail_rules_batch(filter);
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  int out[2];
  if (::pipe(out) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    int err = -1;
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 &&
        write_file("/proc/self/setgroups", "deny") &&
        write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
        write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
      err = load_batch(batch.data(), batch.size());
    (void)!::write(out[1], &err, sizeof err);
    if (err != 0) ::_exit(0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execlp("nft", "nft", "list", "table", "inet", "brig", nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  Loaded r;
  if (::read(out[0], &r.err, sizeof r.err) != sizeof r.err) r.err = -1;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) r.listing.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  ::waitpid(pid, nullptr, 0);
  return r;
}

class JailRules : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v nft >/dev/null") != 0) GTEST_SKIP() << "nft is not installed";
    if (std::system("unshare -rn true 2>/dev/null") != 0) GTEST_SKIP() << "no user namespaces here";
  }
};

// The whole table, exactly: what a filtered jail may reach, read the way an
// administrator reads it.
TEST_F(JailRules, TheKernelHoldsExactlyTheTableOfTheDesign) {
  const Loaded got = load_and_list(sample());
  ASSERT_EQ(got.err, 0) << std::strerror(got.err);
  EXPECT_EQ(got.listing,
            "table inet brig {\n"
            "\tset deny {\n"
            "\t\ttype ipv4_addr . inet_service\n"
            "\t\tflags interval\n"
            "\t\telements = { 10.1.2.9 . 1-65535 }\n"
            "\t}\n"
            "\n"
            "\tset allow {\n"
            "\t\ttype ipv4_addr . inet_service\n"
            "\t\tflags interval\n"
            "\t\telements = { 10.1.2.0/24 . 5432,\n"
            "\t\t\t     203.0.113.7 . 443 }\n"
            "\t}\n"
            "\n"
            "\tchain output {\n"
            "\t\ttype filter hook output priority filter; policy drop;\n"
            "\t\toifname \"lo\" accept\n"
            "\t\tct state established,related accept\n"
            "\t\tip daddr . tcp dport @deny goto refuse\n"
            "\t\tip daddr . udp dport @deny goto refuse\n"
            "\t\tip daddr . tcp dport @allow accept\n"
            "\t\tip daddr . udp dport @allow accept\n"
            "\t\tgoto refuse\n"
            "\t}\n"
            "\n"
            "\tchain refuse {\n"
            "\t\tmeta l4proto tcp reject with tcp reset\n"
            "\t\treject with icmpx admin-prohibited\n"
            "\t}\n"
            "\n"
            "\tchain input {\n"
            "\t\ttype filter hook input priority filter; policy drop;\n"
            "\t\tiifname \"lo\" accept\n"
            "\t\tct state established,related accept\n"
            "\t}\n"
            "}\n");
}

TEST_F(JailRules, NothingAllowedLoadsEmptySets) {
  const Loaded got = load_and_list(NetFilter{});
  ASSERT_EQ(got.err, 0) << std::strerror(got.err);
  EXPECT_THAT(got.listing, Not(HasSubstr("elements")));
  EXPECT_THAT(got.listing, HasSubstr("goto refuse"));
}

// The most a spec may hold (kMaxFilterEntries each) goes in one batch,
// larger than a netlink socket's default send buffer, its elements split
// over several messages.
TEST_F(JailRules, TheLargestSpecLoadsWhole) {
  NetFilter f;
  for (std::size_t i = 0; i < kMaxFilterEntries; ++i) {
    const auto hi = static_cast<std::uint8_t>(i >> 8), lo = static_cast<std::uint8_t>(i);
    f.allow.push_back({{10, hi, lo, 0}, 24, 1, 65535});
    f.deny.push_back({{172, 16, hi, lo}, 32, 22, 22});
  }
  EXPECT_GT(jail_rules_batch(f).size(), 212992u);
  const Loaded got = load_and_list(f);
  ASSERT_EQ(got.err, 0) << std::strerror(got.err);
  EXPECT_THAT(got.listing, HasSubstr("10.15.255.0/24 . 1-65535"));
  EXPECT_THAT(got.listing, HasSubstr("172.16.15.255 . 22"));
}

// Two names pinned to one address give the same entry twice: one element.
TEST_F(JailRules, ARepeatedEntryIsOneElement) {
  NetFilter f = sample();
  f.allow.push_back(f.allow.back());
  const Loaded got = load_and_list(f);
  ASSERT_EQ(got.err, 0) << std::strerror(got.err);
  EXPECT_THAT(got.listing, HasSubstr("203.0.113.7 . 443 }"));
}

// Overlapping entries (a name pinned inside an allowed network) would make
// the kernel refuse the whole batch: they are cut apart, matching the same.
TEST(SetElements, OverlapsAreCutApartAndMatchTheSame) {
  const std::vector<NetFilter::Entry> entries = {{{10, 1, 2, 0}, 24, 80, 80},
                                                 {{10, 1, 2, 5}, 32, 1, 1000},
                                                 {{10, 1, 2, 5}, 32, 80, 80},
                                                 {{10, 1, 2, 5}, 32, 900, 2000},
                                                 {{0, 0, 0, 0}, 0, 443, 443}};
  const std::vector<SetElement> got = set_elements(entries);
  const std::uint32_t net = 0x0a010200, host = 0x0a010205;
  const std::vector<SetElement> want = {{net, net | 0xff, 80, 80}, {host, host, 1, 79},
                                        {host, host, 81, 442},     {host, host, 444, 1000},
                                        {host, host, 1001, 2000},  {0, 0xffffffff, 443, 443}};
  EXPECT_EQ(got, want);
  // The same packets: every (address, port) around the edges.
  auto in = [](const auto& list, std::uint32_t a, std::uint16_t p, auto first, auto last) {
    for (const auto& x : list)
      if (first(x) <= a && a <= last(x) && x.first_port <= p && p <= x.last_port) return true;
    return false;
  };
  for (const std::uint32_t a : {net - 1, net, host - 1, host, host + 1, net | 0xff, net + 256})
    for (const std::uint16_t p : {1, 79, 80, 81, 442, 443, 444, 899, 900, 1000, 1001, 2000, 2001}) {
      const bool by_entries = in(
          entries, a, p,
          [](const NetFilter::Entry& e) {
            std::uint32_t v = 0;
            for (auto o : e.address) v = v << 8 | o;
            return e.prefix == 0 ? 0u : v;
          },
          [](const NetFilter::Entry& e) {
            std::uint32_t v = 0;
            for (auto o : e.address) v = v << 8 | o;
            return e.prefix == 0 ? 0xffffffffu : e.prefix == 32 ? v : v | (0xffffffffu >> e.prefix);
          });
      const bool by_elements = in(
          got, a, p, [](const SetElement& e) { return e.first_address; },
          [](const SetElement& e) { return e.last_address; });
      EXPECT_EQ(by_entries, by_elements) << std::hex << a << std::dec << ":" << p;
    }
}

TEST_F(JailRules, OverlappingEntriesLoad) {
  NetFilter f = sample();
  f.allow.push_back({{10, 1, 2, 7}, 32, 1, 65535});
  f.allow.push_back({{0, 0, 0, 0}, 0, 5432, 5432});
  const Loaded got = load_and_list(f);
  ASSERT_EQ(got.err, 0) << std::strerror(got.err);
  EXPECT_THAT(got.listing, HasSubstr("10.1.2.7 . 1-5431"));
}

// A refused batch says so: nothing half-loaded is taken for a jail's rules.
TEST_F(JailRules, ABrokenBatchIsAnError) {
  std::vector<char> batch = jail_rules_batch(sample());
  // Without its END the kernel would abort the batch yet ack each message.
  batch.resize(batch.size() - 20);
  EXPECT_EQ(load_batch(batch.data(), batch.size()), EINVAL);
  batch.resize(batch.size() - 3);  // a message cut short
  EXPECT_EQ(load_batch(batch.data(), batch.size()), EINVAL);
}

}  // namespace
}  // namespace brig::jail::netfilter
