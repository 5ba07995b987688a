#include "server/policy/net_filter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/policy/net_rule_builders.h"

namespace brig::policy {
namespace {

using Entry = jail::NetFilter::Entry;
using testing::addr;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::rules;
using ::testing::UnorderedElementsAre;

Entry entry(std::array<std::uint8_t, 4> a, int prefix, std::uint16_t first, std::uint16_t last) {
  return Entry{a, static_cast<std::uint8_t>(prefix), first, last};
}

TEST(NetFilter, AddressesAndNetworksAreEntriesAsWrittenWithTheWebsPortsByDefault) {
  const jail::NetFilter f = net_filter(rules({"203.0.113.7", "10.1.2.0/24:5432", "10.9.9.9:22"}));
  EXPECT_THAT(
      f.allow,
      ElementsAre(entry({203, 0, 113, 7}, 32, 80, 80), entry({203, 0, 113, 7}, 32, 443, 443),
                  entry({10, 1, 2, 0}, 24, 5432, 5432), entry({10, 9, 9, 9}, 32, 22, 22)));
  EXPECT_THAT(f.deny, IsEmpty());
  EXPECT_TRUE(f.program.empty());
}

TEST(NetFilter, ADenyWithoutAPortCoversEveryPort) {
  const jail::NetFilter f = net_filter(rules({"10.0.0.0/8:80"}, {"10.0.0.3", "10.0.0.4:80"}));
  EXPECT_THAT(f.deny,
              ElementsAre(entry({10, 0, 0, 3}, 32, 1, 65535), entry({10, 0, 0, 4}, 32, 80, 80)));
}

TEST(NetFilter, ANameGetsItsHostsAddressAndThePolicyNamingItAllowsANonGlobalOne) {
  const jail::NetFilter f =
      net_filter(rules({"web.test:8080"}, {}, {{"web.test", addr("10.77.0.2")}}));
  EXPECT_THAT(f.allow, ElementsAre(entry({10, 77, 0, 2}, 32, 8080, 8080)));
}

TEST(NetFilter, ANamePinnedToLoopbackOrAPrivateAddressReachesNothing) {
  // DNS rebinding: what the proxy would refuse, the kernel rules never hold.
  NetRules r =
      with_pins(rules({"evil.example", "good.example"}), {{"evil.example", addr("127.0.0.1")},
                                                          {"evil.example", addr("169.254.169.254")},
                                                          {"evil.example", addr("10.0.0.1")},
                                                          {"good.example", addr("93.184.216.34")}});
  EXPECT_THAT(r.pinned, ElementsAre(StaticHost{"good.example", addr("93.184.216.34")}));
  EXPECT_THAT(net_filter(r).allow, ElementsAre(entry({93, 184, 216, 34}, 32, 80, 80),
                                               entry({93, 184, 216, 34}, 32, 443, 443)));
}

TEST(NetFilter, APrivateAddressThePolicyAllowsByCidrIsKeptForItsName) {
  NetRules r = with_pins(rules({"db.internal:5432", "10.1.2.0/24:5432"}),
                         {{"db.internal", addr("10.1.2.7")}, {"db.internal", addr("10.3.0.1")}});
  EXPECT_THAT(r.pinned, ElementsAre(StaticHost{"db.internal", addr("10.1.2.7")}));
  EXPECT_THAT(net_filter(r).allow, UnorderedElementsAre(entry({10, 1, 2, 7}, 32, 5432, 5432),
                                                        entry({10, 1, 2, 0}, 24, 5432, 5432)));
}

TEST(NetFilter, ADeniedAddressIsNeverAllowedThroughAName) {
  NetRules r =
      with_pins(rules({"a.example"}, {"93.184.216.0/24"}),
                {{"a.example", addr("93.184.216.34")}, {"a.example", addr("151.101.0.223")}});
  const jail::NetFilter f = net_filter(r);
  EXPECT_THAT(f.allow, ElementsAre(entry({151, 101, 0, 223}, 32, 80, 80),
                                   entry({151, 101, 0, 223}, 32, 443, 443)));
  EXPECT_THAT(f.deny, ElementsAre(entry({93, 184, 216, 0}, 24, 1, 65535)));
}

TEST(NetFilter, ADeniedNamesAddressesAreDenyEntries) {
  NetRules r =
      with_pins(rules({"10.0.0.0/8:443"}, {"bad.example"}), {{"bad.example", addr("10.5.5.5")}});
  EXPECT_THAT(r.pinned, ElementsAre(StaticHost{"bad.example", addr("10.5.5.5")}));
  EXPECT_THAT(net_filter(r).deny, ElementsAre(entry({10, 5, 5, 5}, 32, 1, 65535)));
}

TEST(NetFilter, WildcardsAndIpv6AreLeftToTheProxy) {
  NetRules r = with_pins(rules({"*.pythonhosted.org", "2001:db8::/32", "[2001:db8::1]:22"}),
                         {{"files.pythonhosted.org", addr("151.101.0.223")}});
  EXPECT_THAT(r.pinned, IsEmpty());
  EXPECT_THAT(net_filter(r).allow, IsEmpty());
}

TEST(NetFilter, MappedAndNat64FormsCountAsTheIpv4TheyCarry) {
  const jail::NetFilter f =
      net_filter(rules({"[::ffff:203.0.113.0/120]:80", "[64:ff9b::203.0.113.9]:80"}));
  EXPECT_THAT(f.allow, ElementsAre(entry({203, 0, 113, 0}, 24, 80, 80),
                                   entry({203, 0, 113, 9}, 32, 80, 80)));
}

TEST(NetFilter, OnlyNamesWithoutAHostsEntryAreResolved) {
  EXPECT_THAT(
      names_to_pin(rules({"a.example", "web.test", "*.x.example", "10.0.0.1", "a.example:22"},
                         {"b.example"}, {{"web.test", addr("10.77.0.2")}})),
      ElementsAre("a.example", "b.example"));
}

}  // namespace
}  // namespace brig::policy
