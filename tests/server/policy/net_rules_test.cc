#include "server/policy/net_rules.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/policy/net_rule_builders.h"

namespace brig::policy {
namespace {

using testing::addr;
using ::testing::HasSubstr;
using testing::rule;
using testing::rules;

// The reason parse_net_rule refuses `text` with.
std::string refusal(std::string_view text) {
  auto r = parse_net_rule(text);
  if (r) return "accepted";
  return r.error().why;
}

TEST(ParseAddress, ReadsBothFamiliesAndBrackets) {
  const Address v4 = addr("10.1.2.7");
  EXPECT_FALSE(v4.v6);
  EXPECT_EQ(v4.bytes[0], 10);
  EXPECT_EQ(v4.bytes[3], 7);
  EXPECT_EQ(address_text(v4), "10.1.2.7");
  const Address v6 = addr("[::1]");
  EXPECT_TRUE(v6.v6);
  EXPECT_EQ(v6.bytes[15], 1);
  EXPECT_EQ(address_text(v6), "::1");
  EXPECT_EQ(addr("FD00:0:0::7"), addr("fd00::7"));
  EXPECT_EQ(address_text(addr("::ffff:127.0.0.1")), "::ffff:127.0.0.1");
  for (std::string_view bad :
       {"", "[]", "256.0.0.1", "1.2.3", "01.2.3.4", "[10.1.2.7]", "pypi.org", "::1:", "[::1"}) {
    EXPECT_FALSE(parse_address(bad)) << bad;
  }
}

TEST(ParseNetRule, Names) {
  NetRule r = rule("pypi.org");
  EXPECT_EQ(r.kind, NetRule::Kind::name);
  EXPECT_EQ(r.name, "pypi.org");
  EXPECT_EQ(r.port, std::nullopt);
  EXPECT_EQ(r.text, "pypi.org");

  r = rule("PyPI.Org.:8443");
  EXPECT_EQ(r.name, "pypi.org");
  EXPECT_EQ(r.port, 8443);
  EXPECT_EQ(r.text, "PyPI.Org.:8443");

  r = rule("*.PythonHosted.org");
  EXPECT_EQ(r.kind, NetRule::Kind::subdomains);
  EXPECT_EQ(r.name, "pythonhosted.org");

  EXPECT_EQ(rule("github.com:22").port, 22);
  EXPECT_EQ(rule("localhost").name, "localhost");
  EXPECT_EQ(rule("_acme.x-y.example").name, "_acme.x-y.example");
  EXPECT_EQ(rule(std::string(63, 'a') + ".com").name.size(), 67u);
}

TEST(ParseNetRule, AddressesAndNetworks) {
  NetRule r = rule("10.1.2.7");
  EXPECT_EQ(r.kind, NetRule::Kind::address);
  EXPECT_EQ(r.address, addr("10.1.2.7"));
  EXPECT_EQ(r.prefix, 32);

  r = rule("10.1.2.7:5432");
  EXPECT_EQ(r.kind, NetRule::Kind::address);
  EXPECT_EQ(r.port, 5432);

  r = rule("::1");
  EXPECT_EQ(r.kind, NetRule::Kind::address);
  EXPECT_EQ(r.prefix, 128);
  EXPECT_EQ(r.port, std::nullopt);

  r = rule("[::1]:8080");
  EXPECT_EQ(r.address, addr("::1"));
  EXPECT_EQ(r.port, 8080);
  EXPECT_EQ(rule("[::1]").port, std::nullopt);

  r = rule("10.1.2.0/24:5432");
  EXPECT_EQ(r.kind, NetRule::Kind::network);
  EXPECT_EQ(r.address, addr("10.1.2.0"));
  EXPECT_EQ(r.prefix, 24);
  EXPECT_EQ(r.port, 5432);

  r = rule("fd00::/8");
  EXPECT_EQ(r.kind, NetRule::Kind::network);
  EXPECT_EQ(r.prefix, 8);
  EXPECT_EQ(rule("[fd00::/8]:443").port, 443);
  EXPECT_EQ(rule("[fd00::]/8:443"),
            (NetRule{NetRule::Kind::network, "", addr("fd00::"), 8, 443, "[fd00::]/8:443"}));
  EXPECT_EQ(rule("0.0.0.0/0").prefix, 0);
  EXPECT_EQ(rule("10.1.2.7/32").prefix, 32);
}

TEST(ParseNetRule, RefusesWhatIsMalformed) {
  EXPECT_EQ(refusal(""),
            "an empty entry; write a name like \"pypi.org\", \"*.pythonhosted.org\", "
            "an address or a CIDR, each with an optional \":port\"");
  EXPECT_EQ(refusal("*"),
            "`*` alone would allow every name: name a domain, like \"*.example.com\"");
  EXPECT_EQ(refusal("*:443"),
            "`*` alone would allow every name: name a domain, like \"*.example.com\"");
  EXPECT_EQ(refusal("*.*.com"), "`*.*.com`: only one leading `*.` is allowed");
  EXPECT_EQ(refusal("a.*.com"), "`a.*.com`: `*` may only lead a name, as in \"*.example.com\"");
  EXPECT_EQ(refusal("foo*.com"), "`foo*.com`: `*` may only lead a name, as in \"*.example.com\"");
  EXPECT_EQ(refusal("256.0.0.1"), "256.0.0.1 is not an IPv4 address");
  EXPECT_EQ(refusal("256.0.0.1:80"), "256.0.0.1 is not an IPv4 address");
  EXPECT_EQ(refusal("1.2.3"), "1.2.3 is not an IPv4 address");
  EXPECT_EQ(refusal("pypi.org:0"), "port 0 is out of range 1-65535");
  EXPECT_EQ(refusal("pypi.org:70000"), "port 70000 is out of range 1-65535");
  EXPECT_EQ(refusal("pypi.org:99999999999999999999"),
            "port 99999999999999999999 is out of range 1-65535");
  EXPECT_EQ(refusal("[::1]:0"), "port 0 is out of range 1-65535");
  EXPECT_EQ(refusal("pypi.org:"), "a port must follow ':' (like \"pypi.org:8443\")");
  EXPECT_EQ(refusal("pypi.org:https"), "\"https\" is not a port; write a number from 1 to 65535");
  EXPECT_EQ(refusal("a..b"),
            "`a..b` has an empty label (two dots in a row, or a dot at the start)");
  EXPECT_EQ(refusal("pypi.org.."),
            "`pypi.org..` has an empty label (two dots in a row, or a dot at the start)");
  EXPECT_EQ(refusal(".example.com"),
            "`.example.com` starts with an empty label; write \"*.example.com\" for the names "
            "under a domain");
  EXPECT_EQ(refusal("."),
            "an empty name allows nothing; write a name like \"pypi.org\" or \"*.example.com\"");
  const std::string long_label(64, 'a');
  EXPECT_EQ(
      refusal(long_label + ".com"),
      fmt::format("the label \"{}\" is 64 bytes long; a DNS label has at most 63", long_label));
  std::string long_name;
  while (long_name.size() < 254) long_name += "abcdefghi.";
  long_name += "com";
  EXPECT_EQ(refusal(long_name),
            fmt::format("the name is {} bytes long; a DNS name has at most 253", long_name.size()));
  EXPECT_EQ(refusal("pypi org"),
            "' ' cannot be in a name; a name has letters, digits, '-' and '_' between dots");
  EXPECT_EQ(refusal("bücher.de"),
            "a name outside ASCII: write an internationalized name in its \"xn--\" form");
  EXPECT_EQ(refusal("10.1.2.3/24"), "10.1.2.3/24 has host bits set; write the network 10.1.2.0/24");
  EXPECT_EQ(refusal("fd00::1/8"), "fd00::1/8 has host bits set; write the network fd00::/8");
  EXPECT_EQ(refusal("10.0.0.0/33"), "prefix /33 is out of range 0-32 for an IPv4 network");
  EXPECT_EQ(refusal("fd00::/129"), "prefix /129 is out of range 0-128 for an IPv6 network");
  EXPECT_EQ(refusal("10.0.0.0/"), "prefix / is out of range 0-32 for an IPv4 network");
  EXPECT_EQ(refusal("10.0.0.0/-1"), "prefix /-1 is out of range 0-32 for an IPv4 network");
  EXPECT_EQ(refusal("[10.0.0.1]:80"), "brackets hold an IPv6 address; \"10.0.0.1\" is not one");
  EXPECT_EQ(refusal("[::1"), "'[' without ']'; write an IPv6 address as \"[::1]:8080\"");
  EXPECT_EQ(refusal("[::1]8080"), "\"8080\" after ']'; only a \":port\" may follow");
  EXPECT_EQ(refusal("[zz::1]"), "zz::1 is not an IPv6 address");
  EXPECT_EQ(refusal("pypi.org/24"), "pypi.org is not an IPv4 address");
  // The error names the entry, for messages that show it.
  EXPECT_EQ(parse_net_rule("pypi.org:0").error().where, "pypi.org:0");
}

TEST(Decide, DenyWinsOverAllow) {
  const NetRules r = rules({"*.example.com", "example.com"}, {"secret.example.com"});
  NetVerdict v = decide(r, "secret.example.com", 443);
  EXPECT_FALSE(v.allowed);
  ASSERT_NE(v.rule, nullptr);
  EXPECT_EQ(v.rule->text, "secret.example.com");
  v = decide(r, "www.example.com", 443);
  EXPECT_TRUE(v.allowed);
  ASSERT_NE(v.rule, nullptr);
  EXPECT_EQ(v.rule->text, "*.example.com");
}

TEST(Decide, SubdomainsAreNotTheDomainItself) {
  const NetRules r = rules({"*.pythonhosted.org"});
  EXPECT_TRUE(decide(r, "files.pythonhosted.org", 443).allowed);
  EXPECT_TRUE(decide(r, "a.b.pythonhosted.org", 443).allowed);
  EXPECT_FALSE(decide(r, "pythonhosted.org", 443).allowed);
  EXPECT_FALSE(decide(r, "evilpythonhosted.org", 443).allowed);
  EXPECT_FALSE(decide(r, "pythonhosted.org.evil.com", 443).allowed);
  const NetVerdict none = decide(r, "example.com", 443);
  EXPECT_FALSE(none.allowed);
  EXPECT_EQ(none.rule, nullptr);
}

TEST(Decide, PortsDefaultTo80And443) {
  const NetRules r = rules({"pypi.org", "github.com:22"});
  EXPECT_TRUE(decide(r, "pypi.org", 80).allowed);
  EXPECT_TRUE(decide(r, "pypi.org", 443).allowed);
  EXPECT_FALSE(decide(r, "pypi.org", 22).allowed);
  EXPECT_FALSE(decide(r, "pypi.org", 8443).allowed);
  EXPECT_TRUE(decide(r, "github.com", 22).allowed);
  EXPECT_FALSE(decide(r, "github.com", 443).allowed);
  // A deny's port is its own, too.
  const NetRules d = rules({"*.example.com:8080", "*.example.com"}, {"db.example.com:8080"});
  EXPECT_FALSE(decide(d, "db.example.com", 8080).allowed);
  EXPECT_TRUE(decide(d, "db.example.com", 443).allowed);
}

TEST(Decide, ADenyWithoutAPortRefusesEveryPort) {
  const NetRules r = rules({"*.corp.example:5432", "*.corp.example", "10.0.0.0/8:5432"},
                           {"db.corp.example", "10.9.9.9"});
  for (std::uint16_t port : {80, 443, 5432, 22}) {
    EXPECT_FALSE(decide(r, "db.corp.example", port).allowed) << port;
    EXPECT_FALSE(decide(r, "10.9.9.9", port).allowed) << port;
  }
  EXPECT_TRUE(decide(r, "app.corp.example", 5432).allowed);
  EXPECT_TRUE(decide(r, "10.1.1.1", 5432).allowed);
  // A name resolving to the denied address is refused on any port too.
  EXPECT_FALSE(address_permitted(r, "app.corp.example", *parse_address("10.9.9.9"), 5432));
  EXPECT_TRUE(address_permitted(r, "app.corp.example", *parse_address("10.1.1.1"), 5432));
  EXPECT_FALSE(name_allowed(r, "db.corp.example"));
}

TEST(Decide, NamesIgnoreCaseAndATrailingDot) {
  const NetRules r = rules({"PyPI.org.", "*.Example.COM"}, {"X.example.com"});
  EXPECT_TRUE(decide(r, "pypi.org", 443).allowed);
  EXPECT_TRUE(decide(r, "PYPI.ORG.", 443).allowed);
  EXPECT_TRUE(decide(r, "www.EXAMPLE.com.", 443).allowed);
  EXPECT_FALSE(decide(r, "x.EXAMPLE.com.", 443).allowed);
  EXPECT_FALSE(decide(r, "pypi.org..", 443).allowed);
  EXPECT_FALSE(decide(r, "", 443).allowed);
}

TEST(Decide, LiteralAddressesMatchOnlyAddressRules) {
  const NetRules r = rules({"10.1.2.0/24:5432", "::1", "pypi.org"}, {"10.1.2.9:5432"});
  EXPECT_TRUE(decide(r, "10.1.2.7", 5432).allowed);
  EXPECT_FALSE(decide(r, "10.1.2.7", 443).allowed);
  EXPECT_FALSE(decide(r, "10.1.3.7", 5432).allowed);
  EXPECT_FALSE(decide(r, "10.1.2.9", 5432).allowed);
  EXPECT_TRUE(decide(r, "[::1]", 443).allowed);
  EXPECT_TRUE(decide(r, "::1", 80).allowed);
  // The mapped form of an allowed IPv4 address is that address.
  EXPECT_TRUE(decide(r, "::ffff:10.1.2.7", 5432).allowed);
  // A name rule never allows an address, whatever the name resolves to.
  EXPECT_FALSE(decide(r, "151.101.0.223", 443).allowed);
}

TEST(AddressPermitted, RefusesNonGlobalAddressesThePolicyDidNotName) {
  const NetRules r = rules({"pypi.org", "*.pythonhosted.org"});
  for (std::string_view a : {"127.0.0.1",
                             "127.8.9.1",
                             "10.0.0.1",
                             "10.255.255.255",
                             "169.254.169.254",
                             "::1",
                             "::",
                             "fe80::1",
                             "::ffff:127.0.0.1",
                             "::ffff:169.254.169.254",
                             "100.64.0.1",
                             "100.127.255.254",
                             "172.16.0.1",
                             "172.31.255.1",
                             "192.168.1.1",
                             "0.0.0.0",
                             "224.0.0.1",
                             "255.255.255.255",
                             "fd12:3456::1",
                             "fc00::1",
                             "ff02::1",
                             "fec0::1",
                             "64:ff9b::7f00:1",
                             "::7f00:1"}) {
    EXPECT_FALSE(address_permitted(r, "pypi.org", addr(a), 443)) << a;
  }
  for (std::string_view a : {"151.101.0.223", "100.128.0.1", "172.32.0.1", "2a04:4e42::223",
                             "::ffff:151.101.0.223", "64:ff9b::9765:df"}) {
    EXPECT_TRUE(address_permitted(r, "pypi.org", addr(a), 443)) << a;
  }
}

TEST(AddressPermitted, AHostsEntryNamesAPrivateAddressForItsNameOnly) {
  const NetRules r = rules({"db.test", "other.test"}, {}, {{"db.test", addr("10.1.2.7")}});
  EXPECT_TRUE(address_permitted(r, "db.test", addr("10.1.2.7"), 443));
  EXPECT_TRUE(address_permitted(r, "DB.test.", addr("10.1.2.7"), 80));
  EXPECT_TRUE(address_permitted(r, "db.test", addr("::ffff:10.1.2.7"), 443));
  EXPECT_FALSE(address_permitted(r, "db.test", addr("10.1.2.8"), 443));
  EXPECT_FALSE(address_permitted(r, "other.test", addr("10.1.2.7"), 443));
}

TEST(AddressPermitted, AnAllowCidrCoversAPrivateAddressOnItsPort) {
  const NetRules r = rules({"db.corp.example:5432", "10.1.2.0/24:5432", "fd00::/8"});
  EXPECT_TRUE(address_permitted(r, "db.corp.example", addr("10.1.2.7"), 5432));
  EXPECT_FALSE(address_permitted(r, "db.corp.example", addr("10.1.2.7"), 443));
  EXPECT_FALSE(address_permitted(r, "db.corp.example", addr("10.1.3.7"), 5432));
  EXPECT_TRUE(address_permitted(r, "any.example", addr("fd00::7"), 443));
  EXPECT_FALSE(address_permitted(r, "any.example", addr("fd00::7"), 5432));
}

TEST(AddressPermitted, ADenyNamingTheAddressRefusesIt) {
  const NetRules r =
      rules({"db.test", "10.0.0.0/8", "*.example.com"},
            {"10.1.2.7", "151.101.0.0/16", "[::ffff:10.9.9.9]"}, {{"db.test", addr("10.1.2.7")}});
  EXPECT_FALSE(address_permitted(r, "db.test", addr("10.1.2.7"), 443));
  EXPECT_TRUE(address_permitted(r, "db.test", addr("10.1.2.8"), 443));
  EXPECT_FALSE(address_permitted(r, "www.example.com", addr("151.101.0.223"), 443));
  EXPECT_FALSE(address_permitted(r, "www.example.com", addr("10.9.9.9"), 443));
  EXPECT_TRUE(address_permitted(r, "www.example.com", addr("151.102.0.1"), 443));
}

TEST(StaticAddresses, ByNameInAnyCase) {
  const NetRules r = rules({}, {},
                           {{"db.test", addr("10.1.2.7")},
                            {"db.test", addr("fd00::7")},
                            {"web.test", addr("10.1.2.8")}});
  EXPECT_EQ(static_addresses(r, "DB.Test."),
            (std::vector<Address>{addr("10.1.2.7"), addr("fd00::7")}));
  EXPECT_EQ(static_addresses(r, "web.test"), (std::vector<Address>{addr("10.1.2.8")}));
  EXPECT_TRUE(static_addresses(r, "test").empty());
}

TEST(NameAllowed, AnyPortOfTheNameThatADenyLeaves) {
  const NetRules r = rules({"pypi.org", "*.example.com", "git.corp.example:22"},
                           {"x.example.com", "git.corp.example:22"});
  EXPECT_TRUE(name_allowed(r, "PyPI.org."));
  EXPECT_TRUE(name_allowed(r, "www.example.com"));
  EXPECT_FALSE(name_allowed(r, "example.com"));
  EXPECT_FALSE(name_allowed(r, "x.example.com"));
  EXPECT_FALSE(name_allowed(r, "git.corp.example"));
  EXPECT_FALSE(name_allowed(r, "evil.org"));
  // A deny of one default port leaves the other.
  EXPECT_TRUE(name_allowed(rules({"a.test"}, {"a.test:80"}), "a.test"));
}

TEST(AllowHint, NamesTheHostAndPort) {
  EXPECT_EQ(allow_hint("PyPI.org.", 443), "allow_add = [\"pypi.org:443\"]");
  EXPECT_EQ(allow_hint("10.1.2.7", 5432), "allow_add = [\"10.1.2.7:5432\"]");
  EXPECT_EQ(allow_hint("[::1]", 8080), "allow_add = [\"[::1]:8080\"]");
  // Whatever the jail sent stays inside the TOML string.
  EXPECT_EQ(allow_hint("a\"b", 80), "allow_add = [\"a\\\"b:80\"]");
  // Every hint parses back into a rule that allows what was refused.
  for (auto [host, port] : {std::pair<std::string_view, std::uint16_t>{"pypi.org", 443},
                            {"10.1.2.7", 5432},
                            {"::1", 8080}}) {
    const std::string hint = allow_hint(host, port);
    const size_t open = hint.find("[\"") + 2, close = hint.rfind("\"]");
    const NetRules r = rules({std::string_view(hint).substr(open, close - open)});
    EXPECT_TRUE(decide(r, host, port).allowed) << hint;
  }
}

TEST(AddressPermitted, ADenyHoldsForTheNat64AndMappedFormsOfItsAddresses) {
  const NetRules r = rules({"*.example.com"}, {"93.184.216.0/24"});
  for (const char* a : {"93.184.216.34", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"})
    EXPECT_FALSE(address_permitted(r, "www.example.com", *parse_address(a), 443)) << a;
  EXPECT_TRUE(address_permitted(r, "www.example.com", *parse_address("64:ff9b::5db9:d822"), 443));
  // A deny written in the NAT64 form holds for the IPv4 address too.
  const NetRules n = rules({"*.example.com"}, {"64:ff9b::5db8:d822"});
  EXPECT_FALSE(address_permitted(n, "www.example.com", *parse_address("93.184.216.34"), 443));
}

TEST(AddressPermitted, AnIpv6NetworkNeverHoldsIpv4Addresses) {
  const NetRules r = rules({"::/0", "[2001:4860::/32]:8443"});
  for (const char* a :
       {"127.0.0.1", "169.254.169.254", "10.0.0.1", "::ffff:127.0.0.1", "64:ff9b::7f00:1"}) {
    EXPECT_FALSE(decide(r, a, 443).allowed) << a;
    EXPECT_FALSE(address_permitted(r, "x.example", *parse_address(a), 443)) << a;
  }
  EXPECT_TRUE(decide(r, "2606:4700::1", 443).allowed);
  // The mapped range itself, written out, is the IPv4 space.
  EXPECT_TRUE(decide(rules({"::ffff:0:0/96"}), "8.8.8.8", 443).allowed);
}

TEST(AddressNamed, OnlyAHostsEntryOfThatNameOrAnAddressAllowRuleOnThatPort) {
  NetRules r = rules({"*.example.com", "198.51.100.0/24:8443", "[2001:db8::1]:22"});
  r.hosts.push_back({"db.example.com", *parse_address("203.0.113.9")});
  // What the proxy asks of an address that turns out to be this host's own.
  EXPECT_TRUE(address_named(r, "db.example.com", *parse_address("203.0.113.9"), 443));
  EXPECT_FALSE(address_named(r, "www.example.com", *parse_address("203.0.113.9"), 443));
  EXPECT_TRUE(address_named(r, "www.example.com", *parse_address("198.51.100.7"), 8443));
  EXPECT_FALSE(address_named(r, "www.example.com", *parse_address("198.51.100.7"), 443));
  EXPECT_TRUE(address_named(r, "x", *parse_address("::ffff:198.51.100.7"), 8443));
  EXPECT_TRUE(address_named(r, "x", *parse_address("2001:db8::1"), 22));
  // A name rule names no address, however the name resolves.
  EXPECT_FALSE(address_named(r, "www.example.com", *parse_address("93.184.216.34"), 443));
}

TEST(AddressPermitted, AddressesThatEmbedOrStandForOthersMustBeNamed) {
  const NetRules r = rules({"*.example.com"});
  for (const char* a : {"2002:7f00:1::1", "2001:0:4136:e378::1", "64:ff9b:1::a00:1",
                        "168.63.129.16", "2001:db8::1", "100::1", "192.0.2.1"})
    EXPECT_FALSE(address_permitted(r, "www.example.com", *parse_address(a), 443)) << a;
  EXPECT_TRUE(address_permitted(r, "www.example.com", *parse_address("2606:4700::1"), 443));
}

}  // namespace
}  // namespace brig::policy
