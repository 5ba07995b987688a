// The host's table of network mode `filtered` as text, and as the kernel
// takes it: loaded with nft into a fresh user and network namespace
// (`unshare -rn`, so the test runs unprivileged too). The jail's own table
// is jail_rules_test.cc's.
#include "jail/netfilter/ruleset.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace brig::jail::netfilter {
namespace {

using ::testing::HasSubstr;

// `script` run by sh; its output and exit status.
std::pair<std::string, int> sh(const std::string& script) {
  FILE* p = ::popen(("(" + script + ") 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

std::string file_of(const std::string& text) {
  static int n = 0;
  const std::string path = ::testing::TempDir() + "ruleset_" + std::to_string(n++) + ".nft";
  std::ofstream(path) << text;
  return path;
}

TEST(Ruleset, JailAddressesAreDistinctThirtiesInTheSubnet) {
  EXPECT_EQ(ipv4_text(host_address(0)), "10.213.0.1");
  EXPECT_EQ(ipv4_text(jail_address(0)), "10.213.0.2");
  EXPECT_EQ(ipv4_text(host_address(kMaxVeths - 1)), "10.213.255.253");
  EXPECT_EQ(ipv4_text(jail_address(kMaxVeths - 1)), "10.213.255.254");
  EXPECT_EQ(ipv4_text(host_address(1)), "10.213.0.5");
}

class RulesetKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sh("command -v nft").second != 0) GTEST_SKIP() << "nft is not installed";
    if (sh("unshare -rn true").second != 0) GTEST_SKIP() << "no user namespaces here";
  }
};

TEST_F(RulesetKernel, TheHostsTableLoadsAgainAndAgainAsOneCopy) {
  const std::string host = file_of(host_ruleset());
  auto [once, rc1] =
      sh("unshare -rn sh -c 'nft -f " + host + " && nft list table inet brig_filtered'");
  ASSERT_EQ(rc1, 0) << once;
  auto [thrice, rc3] = sh("unshare -rn sh -c 'nft -f " + host + " && nft -f " + host +
                          " && nft -f " + host + " && nft list table inet brig_filtered'");
  ASSERT_EQ(rc3, 0) << thrice;
  EXPECT_EQ(once, thrice);
  EXPECT_THAT(once, HasSubstr("masquerade"));
  EXPECT_THAT(once, HasSubstr("ip saddr 10.213.0.0/16"));
  EXPECT_THAT(once, HasSubstr("fib daddr type local drop"));
}

// The host's table is loaded again when the kernel holds another
// number of rules than host_rule_count(): the count must be the kernel's.
TEST_F(RulesetKernel, HostRuleCountIsWhatTheKernelHolds) {
  const std::string host = file_of(host_ruleset());
  auto [listed, rc] = sh("unshare -rn sh -c 'nft -f " + host +
                         " && nft -a list table inet brig_filtered' | grep -c '# handle'");
  ASSERT_EQ(rc, 0) << listed;
  // Every rule, each chain and the table have a handle.
  const int chains = 4;
  EXPECT_EQ(std::stoi(listed), host_rule_count() + chains + 1);
  EXPECT_GE(host_rule_count(), 9);
}

}  // namespace
}  // namespace brig::jail::netfilter
