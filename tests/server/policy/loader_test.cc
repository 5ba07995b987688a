#include "server/policy/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/policy/policy_test_util.h"

namespace brig::policy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::messages;
using testing::source;

class Loader : public ::testing::Test {
 protected:
  LoadResult load(std::string text) { return load_policy(source(std::move(text)), x); }
  EnvMap env{{"PROJECT", "/srv/p"}};
  Expansion x{"/home/ada", env};
};

TEST_F(Loader, ReadsEverySection) {
  auto r = load(R"(description = "all of it"
[filesystem]
workspace = "read_only"
read_only = ["/usr", { path = "/lib64", optional = true }, "/usr/"]
read_write = ["~/.cache", "$PROJECT/out"]
hidden = ["~/.ssh"]
tmp_size = "64MiB"
private_home = false
home_size = 1048576
dangerously_writable_git = true
dangerously_devices = ["/dev/fuse", { path = "/dev/net/tun", optional = true }]
[environment]
pass = ["TERM", "LC_*"]
set = { HOME = "~", PATH = "~/bin:/usr/bin", PRICE = "$$5" }
[limits]
memory = "2GiB"
pids = 64
cpu_time = "90s"
file_size = "unlimited"
open_files = 100
wall_time = "1h30m"
[seccomp]
enabled = false
[landlock]
enabled = false
[namespaces]
dangerously_share = ["ipc", "uts"]
[network]
mode = "dangerously_host"
loopback_servers = true
[identity]
as_root = "user"
uid = 1000
gid = 100
dangerously_unmask_root_secrets = true
[require]
layers = ["namespaces", "cgroups"]
[tools]
disabled = ["exec", "write_file"]
)");
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  Policy want;
  want.description = "all of it";
  want.filesystem = Filesystem{
      .workspace = WorkspaceAccess::read_only,
      .read_only = {{"/usr", false}, {"/lib64", true}},
      .read_write = {{"/home/ada/.cache", false}, {"/srv/p/out", false}},
      .hidden = {"/home/ada/.ssh"},
      .tmp_size = 64u << 20,
      .private_home = false,
      .home_size = 1u << 20,
      .dangerously_writable_git = true,
      .dangerously_devices = {{"/dev/fuse", false}, {"/dev/net/tun", true}},
  };
  want.environment.pass = {"TERM", "LC_*"};
  want.environment.set = {
      {"HOME", "/home/ada"}, {"PATH", "/home/ada/bin:/usr/bin"}, {"PRICE", "$5"}};
  want.limits.memory_bytes = uint64_t{2} << 30;
  want.limits.pids = 64;
  want.limits.cpu_seconds = 90;
  want.limits.open_files = 100;
  want.limits.wall_time = std::chrono::minutes(90);
  want.seccomp = false;
  want.landlock = false;
  want.dangerously_share = {SharedNamespace::ipc, SharedNamespace::uts};
  want.network = Network{NetworkMode::dangerously_host, true, {}};
  want.identity = Identity{RootIdentity::user, 1000, 100, true};
  want.require = {jail::Layer::namespaces, jail::Layer::cgroups};
  want.disabled_tools = {"exec", "write_file"};
  EXPECT_EQ(r->policy, want);
  EXPECT_THAT(r->chain, ElementsAre("test.toml"));
}

TEST_F(Loader, AnEmptyFileIsTheBuiltInDefaults) {
  auto r = load("");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->policy, Policy{});
}

TEST_F(Loader, MisspelledKeyGetsDidYouMean) {
  EXPECT_THAT(messages(load("[filesystem]\n  read_onyl = [\"/usr\"]\n")),
              ElementsAre("test.toml:2:3: unknown key \"read_onyl\" in [filesystem]; did you mean "
                          "\"read_only\"?"));
}

TEST_F(Loader, KeyInTheWrongSectionSaysWhereItGoes) {
  EXPECT_THAT(messages(load("[filesystem]\nmemory = \"1GiB\"\n")),
              ElementsAre("test.toml:2:1: \"memory\" does not belong in [filesystem]; it goes in "
                          "[limits]"));
  EXPECT_THAT(messages(load("wall_time = \"1h\"\n")),
              ElementsAre("test.toml:1:1: \"wall_time\" does not belong at the top level; it goes "
                          "in [limits]"));
}

TEST_F(Loader, UnknownKeyListsTheAllowedOnes) {
  EXPECT_THAT(
      messages(load("[network]\nallow_domains = []\n")),
      ElementsAre("test.toml:2:1: unknown key \"allow_domains\" in [network]; the keys "
                  "there are \"mode\", \"loopback_servers\", \"allow\", \"allow_add\", \"deny\", "
                  "\"deny_add\" or \"hosts\""));
}

TEST_F(Loader, MisspelledSection) {
  EXPECT_THAT(messages(load("[filesytem]\nworkspace = \"read_only\"\n")),
              ElementsAre("test.toml:1:2: unknown key \"filesytem\" at the top level; did you mean "
                          "\"filesystem\"?"));
  EXPECT_THAT(messages(load("[secrets]\n")),
              ElementsAre("test.toml:1:2: unknown key \"secrets\" at the top level; write "
                          "\"description\", \"extends\" or a section: \"filesystem\", "
                          "\"environment\", \"limits\", \"seccomp\", \"landlock\", \"namespaces\", "
                          "\"network\", \"llm\", \"identity\", \"require\" or \"tools\""));
}

TEST_F(Loader, EnumValuesListWhatIsAllowed) {
  EXPECT_THAT(
      messages(load("[network]\nmode = \"nonee\"\n")),
      ElementsAre(
          "test.toml:2:8: network.mode = \"nonee\" is not allowed; did you mean "
          "\"none\"? write one of \"none\", \"proxy\", \"filtered\" or \"dangerously_host\""));
  EXPECT_THAT(messages(load("[network]\nmode = \"host\"\n")),
              ElementsAre("test.toml:2:8: network.mode = \"host\" is not allowed; did you mean "
                          "\"dangerously_host\"? write one of \"none\", \"proxy\", "
                          "\"filtered\" or \"dangerously_host\""));
  EXPECT_THAT(messages(load("[filesystem]\nworkspace = true\n")),
              ElementsAre("test.toml:2:13: filesystem.workspace must be one of \"read_write\" or "
                          "\"read_only\" (a quoted string); found a boolean"));
  EXPECT_THAT(messages(load("[require]\nlayers = [\"seccomp\", \"apparmor\"]\n")),
              ElementsAre("test.toml:2:22: require.layers entries = \"apparmor\" is not allowed; "
                          "write one of \"namespaces\", \"landlock\", \"seccomp\", \"cgroups\" or "
                          "\"capabilities\""));
}

TEST_F(Loader, WrongTypesSayWhatToWrite) {
  EXPECT_THAT(
      messages(load("[seccomp]\nenabled = \"yes\"\n[limits]\npids = \"many\"\ntmp_size = 1\n"
                    "[filesystem]\ntmp_size = 5.5\nread_only = \"/usr\"\n")),
      ElementsAre(
          "test.toml:2:11: seccomp.enabled must be true or false (no quotes); found a string",
          "test.toml:4:8: limits.pids must be a whole number or \"unlimited\"; found a string",
          "test.toml:5:1: \"tmp_size\" does not belong in [limits]; it goes in [filesystem]",
          "test.toml:7:12: filesystem.tmp_size must be a size like \"512MiB\"; found a number "
          "with a fraction",
          "test.toml:8:13: filesystem.read_only must be a list, like [\"/usr\", { path = "
          "\"/lib64\", optional = true }]; found a string"));
}

TEST_F(Loader, SyntaxErrorHasItsPosition) {
  auto r = load("[filesystem]\nread_only = [\"/usr\"\n");
  ASSERT_FALSE(r);
  ASSERT_EQ(r.error().size(), 1u);
  EXPECT_EQ(r.error()[0].where, "test.toml:2:21");  // where the "]" should be
  EXPECT_THAT(r.error()[0].why, ::testing::StartsWith("TOML syntax: "));
}

TEST_F(Loader, PathErrors) {
  EXPECT_THAT(
      messages(load("[filesystem]\nread_only = [\"usr\", \"$NOPE/x\", \"/a/../b\", 3, "
                    "{ path = \"/x\", optinal = true }, { optional = true }]\n")),
      ElementsAre("test.toml:2:14: filesystem.read_only: \"usr\" is relative; write an absolute "
                  "path, or start it with \"~/\" or \"$VAR/\"",
                  "test.toml:2:21: filesystem.read_only: environment variable NOPE is not set; set "
                  "it, or write the value without $NOPE",
                  "test.toml:2:32: filesystem.read_only: \"/a/../b\" contains \"..\"; write the "
                  "path without it",
                  "test.toml:2:43: each entry of filesystem.read_only is a path string or { path "
                  "= \"...\", optional = true }; found an integer",
                  "test.toml:2:61: unknown key \"optinal\" in an entry of filesystem.read_only; "
                  "did you mean \"optional\"? an entry has \"path\" and \"optional\"",
                  "test.toml:2:79: an entry of filesystem.read_only needs a path: { path = "
                  "\"/lib64\", optional = true }"));
}

TEST_F(Loader, LimitErrors) {
  EXPECT_THAT(messages(load("[limits]\ncpu_time = \"1500ms\"\nmemory = \"512K\"\nwall_time = 30\n"
                            "open_files = 2\nfile_size = \"8GB\"\nwall_time = \"0s\"\n")),
              // TOML itself refuses the second wall_time, before any of the others.
              ElementsAre("test.toml:7:13: TOML syntax: Error while parsing key-value pair: cannot "
                          "redefine existing integer 'wall_time'"));
  EXPECT_THAT(
      messages(load("[limits]\ncpu_time = \"1500ms\"\nmemory = \"512K\"\nwall_time = 30\n"
                    "open_files = 2\nfile_size = \"8GB\"\npids = 0\n")),
      ElementsAre(
          "test.toml:2:12: limits.cpu_time counts whole seconds (RLIMIT_CPU); write it as \"90s\" "
          "or \"2m\"",
          "test.toml:3:10: limits.memory below 1MiB leaves no room for any program; write at "
          "least \"1MiB\"",
          "test.toml:4:13: limits.wall_time must be a duration like \"30m\" (quoted), or "
          "\"unlimited\"; found an integer",
          "test.toml:5:14: limits.open_files = 2 is out of range; write a number from 3 to "
          "2147483647 or \"unlimited\"",
          "test.toml:6:13: limits.file_size: \"8GB\" is ambiguous (decimal or binary?); write "
          "\"8GiB\" for binary units, or \"unlimited\" for no limit",
          "test.toml:7:8: limits.pids = 0 is out of range; write a number from 1 to 2147483647 or "
          "\"unlimited\""));
}

TEST_F(Loader, UnlimitedClearsALimit) {
  auto r =
      load("[limits]\nmemory = \"unlimited\"\npids = \"unlimited\"\nwall_time = \"unlimited\"\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->policy.limits, jail::Limits{});
}

TEST_F(Loader, EnvironmentErrors) {
  EXPECT_THAT(
      messages(load("[environment]\npass = [\"*\", \"FOO-BAR\", \"OK\"]\n"
                    "set = { X = 1, \"A B\" = \"y\", Y = \"$NOPE\" }\n")),
      ElementsAre(
          "test.toml:2:9: \"*\" would pass the whole host environment; name the variables instead",
          "test.toml:2:14: \"FOO-BAR\" is not a variable name; write a name like \"TERM\", or a "
          "prefix like \"LC_*\"",
          "test.toml:3:13: environment.set.X must be a string: write X = \"...\" (quoted); found "
          "an integer",
          "test.toml:3:16: \"A B\" is not a variable name; use letters, digits and _",
          "test.toml:3:33: environment.set.Y: environment variable NOPE is not set; set it, or "
          "write the value without $NOPE"));
}

TEST_F(Loader, ReadsTheNetworkRules) {
  auto r = load(R"([network]
mode = "proxy"
allow = ["pypi.org", "*.PythonHosted.org", "github.com:22", "10.1.2.0/24:5432", "[::1]:8080",
         "pypi.org"]
allow_add = ["PYPI.org."]
deny = ["*.internal.example"]
hosts = { "db.test" = "10.1.2.7", "DB6.Test." = "[fd00::7]" }
)");
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  const NetRules& rules = r->policy.network.rules;
  std::vector<std::string> allow;
  for (const NetRule& a : rules.allow) allow.push_back(a.text);
  // A rule written again, in any case, is the first one.
  EXPECT_THAT(allow, ElementsAre("pypi.org", "*.PythonHosted.org", "github.com:22",
                                 "10.1.2.0/24:5432", "[::1]:8080"));
  EXPECT_EQ(rules.allow[1].name, "pythonhosted.org");
  EXPECT_EQ(rules.deny, (std::vector<NetRule>{*parse_net_rule("*.internal.example")}));
  EXPECT_EQ(rules.hosts, (std::vector<StaticHost>{{"db.test", *parse_address("10.1.2.7")},
                                                  {"db6.test", *parse_address("fd00::7")}}));
  EXPECT_EQ(r->policy.network.mode, NetworkMode::proxy);
}

// Each entry of a list is its own node: its own line and column.
TEST_F(Loader, EveryMalformedRuleIsAnErrorAtItsPosition) {
  EXPECT_THAT(
      messages(load(R"([network]
mode = "proxy"
allow = ["pypi.org", "*.*.com", "256.0.0.1",
  "pypi.org:70000", "*", "", 5, "a..b"]
deny_add = ["10.1.2.3/24", "10.0.0.0/33"]
hosts = { "db.test" = "10.1.2.777", "*.x.test" = "10.0.0.1", "ok.test" = "fd00::1", "n.test" = 7 }
)")),
      ElementsAre(
          "test.toml:3:22: network.allow entry \"*.*.com\": `*.*.com`: only one leading `*.` is "
          "allowed",
          "test.toml:3:33: network.allow entry \"256.0.0.1\": 256.0.0.1 is not an IPv4 address",
          "test.toml:4:3: network.allow entry \"pypi.org:70000\": port 70000 is out of range "
          "1-65535",
          "test.toml:4:21: network.allow entry \"*\": `*` alone would allow every name: name a "
          "domain, like \"*.example.com\"",
          "test.toml:4:26: network.allow entry \"\": an empty entry; write a name like "
          "\"pypi.org\", \"*.pythonhosted.org\", an address or a CIDR, each with an optional "
          "\":port\"",
          "test.toml:4:30: network.allow entries must be a string, like \"pypi.org\" or "
          "\"github.com:22\"; found an integer",
          "test.toml:4:33: network.allow entry \"a..b\": `a..b` has an empty label (two dots in a "
          "row, or a dot at the start)",
          "test.toml:5:13: network.deny entry \"10.1.2.3/24\": 10.1.2.3/24 has host bits set; "
          "write the network 10.1.2.0/24",
          "test.toml:5:28: network.deny entry \"10.0.0.0/33\": prefix /33 is out of range 0-32 "
          "for an IPv4 network",
          "test.toml:6:23: network.hosts.\"db.test\" must be an IPv4 or IPv6 address, like "
          "\"10.1.2.7\" or \"fd00::7\"; found \"10.1.2.777\"",
          "test.toml:6:37: network.hosts \"*.x.test\": a static host is a name, without `*.` or "
          "a port (the address goes on the right: \"db.test\" = \"10.1.2.7\")",
          "test.toml:6:96: network.hosts.\"n.test\" must be an IPv4 or IPv6 address, like "
          "\"10.1.2.7\" or \"fd00::7\"; found an integer"));
  EXPECT_THAT(messages(load("[network]\nmode = \"proxy\"\nallow = \"pypi.org\"\n"
                            "hosts = [\"db.test\"]\n")),
              ElementsAre("test.toml:3:9: network.allow must be a list, like [\"pypi.org\", "
                          "\"*.pythonhosted.org\", \"10.1.2.0/24:5432\"]; found a string",
                          "test.toml:4:9: network.hosts must be a table, like hosts = { "
                          "\"db.test\" = \"10.1.2.7\" }; found a list"));
}

// A rule that would not hold is refused, so nobody believes it does.
TEST_F(Loader, RulesNeedTheProxyMode) {
  EXPECT_THAT(
      messages(load("[network]\nallow = [\"pypi.org\"]\n")),
      ElementsAre(
          "test.toml:2:9: network.allow takes effect only with mode = \"proxy\" or \"filtered\", "
          "and mode is \"none\": nothing outside the jail is reachable, whatever the rules "
          "say; write mode = \"proxy\" in [network], or remove network.allow"));
  EXPECT_THAT(
      messages(load("[network]\nmode = \"dangerously_host\"\ndeny = [\"10.0.0.0/8\"]\n"
                    "hosts = { \"db.test\" = \"10.1.2.7\" }\n")),
      ElementsAre(
          "test.toml:3:8: network.deny takes effect only with mode = \"proxy\" or \"filtered\", "
          "and "
          "mode is \"dangerously_host\" (set at test.toml:2:8): the jail has the host's whole "
          "network, which no rule limits; write mode = \"proxy\" in [network], or remove "
          "network.deny",
          "test.toml:4:9: network.hosts takes effect only with mode = \"proxy\" or \"filtered\", "
          "and "
          "mode is \"dangerously_host\" (set at test.toml:2:8): the jail has the host's whole "
          "network, which no rule limits; write mode = \"proxy\" in [network], or remove "
          "network.hosts"));
  // Emptied, the lists say nothing that could mislead.
  EXPECT_TRUE(load("[network]\nmode = \"none\"\nallow = []\ndeny_add = []\nhosts = {}\n"));
  // filtered holds them as kernel rules (and its proxy as proxy does).
  auto filtered = load(
      "[network]\nmode = \"filtered\"\nallow = [\"10.1.2.0/24:5432\"]\n"
      "deny = [\"10.1.2.9\"]\nhosts = { \"db.test\" = \"10.1.2.7\" }\n");
  ASSERT_TRUE(filtered);
  EXPECT_EQ(filtered->policy.network.mode, NetworkMode::filtered);
  EXPECT_EQ(filtered->policy.network.rules.allow.size(), 1u);
}

TEST_F(Loader, NetworkNamespaceIsChosenByTheNetworkMode) {
  EXPECT_THAT(messages(load("[namespaces]\ndangerously_share = [\"net\"]\n")),
              ElementsAre("test.toml:2:22: the network namespace follows network.mode; write mode "
                          "= \"dangerously_host\" in [network] to share the host's"));
}

TEST_F(Loader, ContradictionsAcrossSections) {
  EXPECT_THAT(
      messages(load("[filesystem]\nread_only = [\"/opt\", \"~/.ssh/config\"]\nread_write = "
                    "[\"/opt\"]\nhidden = [\"~/.ssh\"]\n[seccomp]\nenabled = false\n[landlock]\n"
                    "enabled = false\n[identity]\nas_root = \"user\"\nuid = 0\n")),
      ElementsAre(
          "test.toml:3:15: \"/opt\" is in both filesystem.read_only and filesystem.read_write; "
          "keep it in one of them",
          "test.toml:2:22: \"/home/ada/.ssh/config\" in filesystem.read_only lies in the hidden "
          "path \"/home/ada/.ssh\"; remove it from one of filesystem.read_only and "
          "filesystem.hidden",
          "test.toml:6:11: seccomp.enabled = false, but require.layers lists \"seccomp\"; remove "
          "it from require.layers (or enable seccomp)",
          "test.toml:8:11: landlock.enabled = false, but require.layers lists \"landlock\"; "
          "remove it from require.layers (or enable landlock)",
          "test.toml:11:7: identity.uid = 0 is root's; write an unprivileged id (65534 is "
          "nobody), or as_root = \"dangerously_host_root\" to make the jail's root host root"));
}

// as_root's old default "root" (host root) is refused with both new names:
// read either way, an old policy would silently change its jail.
TEST_F(Loader, AsRootNamesTheModesAndRefusesTheOldSpelling) {
  for (const auto& [value, mode] :
       {std::pair{"mapped", RootIdentity::mapped}, std::pair{"user", RootIdentity::user},
        std::pair{"dangerously_host_root", RootIdentity::dangerously_host_root}}) {
    auto r = load(std::string("[identity]\nas_root = \"") + value + "\"\n");
    ASSERT_TRUE(r) << value << ": " << ::testing::PrintToString(messages(r));
    EXPECT_EQ(r->policy.identity.as_root, mode) << value;
  }
  EXPECT_EQ(Policy{}.identity.as_root, RootIdentity::mapped);
  EXPECT_THAT(messages(load("[identity]\nas_root = \"root\"\n")),
              ElementsAre("test.toml:2:11: identity.as_root = \"root\" was renamed: write "
                          "\"mapped\" (the default: uid 0 in the jail is the unprivileged "
                          "identity.uid on the host, and the workspace keeps its owner through an "
                          "idmapped mount) or, for the old behaviour where the jail's uid 0 is "
                          "host root, \"dangerously_host_root\""));
  EXPECT_THAT(messages(load("[identity]\nas_root = \"host_root\"\n")),
              ElementsAre(HasSubstr("did you mean \"dangerously_host_root\"?")));
  // mapped: gid 0 would hand the jail root's group; user keeps allowing it.
  EXPECT_THAT(messages(load("[identity]\ngid = 0\n")),
              ElementsAre(HasSubstr("identity.gid = 0 is root's")));
  EXPECT_TRUE(load("[identity]\nas_root = \"user\"\ngid = 0\n"));
  EXPECT_TRUE(load("[identity]\nas_root = \"dangerously_host_root\"\nuid = 0\n"));
}

TEST_F(Loader, SharingTheMountNamespaceNeedsNoPrivateHome) {
  EXPECT_THAT(messages(load("[namespaces]\ndangerously_share = [\"mount\"]\n")),
              ElementsAre("test.toml:2:21: sharing the mount namespace leaves no private home; "
                          "also write private_home = false in [filesystem]"));
  EXPECT_TRUE(
      load("[namespaces]\ndangerously_share = [\"mount\"]\n[filesystem]\nprivate_home = "
           "false\n"));
}

TEST_F(Loader, DuplicatePathsMergeAndRequiredWins) {
  auto r = load(
      "[filesystem]\nread_only = [{ path = \"/a\", optional = true }, \"/a\", "
      "{ path = \"/b\", optional = true }, \"/b/\"]\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->policy.filesystem.read_only, (std::vector<PathRule>{{"/a", false}, {"/b", false}}));
}

TEST_F(Loader, DevicesAddAppendsAndDuplicatesMerge) {
  auto r = load(
      "[filesystem]\ndangerously_devices = [{ path = \"/dev/kvm\", optional = true }, "
      "\"/dev/fuse\"]\ndangerously_devices_add = [\"/dev/kvm\", \"/dev//net/./tun\"]\n");
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  EXPECT_EQ(
      r->policy.filesystem.dangerously_devices,
      (std::vector<PathRule>{{"/dev/kvm", false}, {"/dev/fuse", false}, {"/dev/net/tun", false}}));
}

TEST_F(Loader, DeviceErrors) {
  EXPECT_THAT(
      messages(
          load("[filesystem]\ndangerously_devices = [\"/etc/passwd\", \"/dev/../etc\", \"/dev\", "
               "\"/dev/null\", \"/dev/pts/0\", \"dev/fuse\", 7, { path = \"/dev/kvm\", "
               "optional = \"yes\" }]\n")),
      ElementsAre(
          "test.toml:2:24: filesystem.dangerously_devices: \"/etc/passwd\" is not a path under "
          "/dev; name a device like \"/dev/fuse\"",
          "test.toml:2:39: filesystem.dangerously_devices: \"/dev/../etc\" contains \"..\"; write "
          "the path without it",
          "test.toml:2:54: filesystem.dangerously_devices: \"/dev\" is the jail's own; name a "
          "device under it like \"/dev/fuse\"",
          "test.toml:2:62: filesystem.dangerously_devices: \"/dev/null\" is part of the jail's "
          "minimal /dev already (/dev/null); remove it",
          "test.toml:2:75: filesystem.dangerously_devices: \"/dev/pts/0\" is part of the jail's "
          "minimal /dev already (/dev/pts); remove it",
          "test.toml:2:89: filesystem.dangerously_devices: \"dev/fuse\" is relative; write an "
          "absolute path, or start it with \"~/\" or \"$VAR/\"",
          "test.toml:2:101: each entry of filesystem.dangerously_devices is a path string or { "
          "path = \"...\", optional = true }; found an integer",
          "test.toml:2:136: filesystem.dangerously_devices optional must be true or false (no "
          "quotes); found a string"));
  EXPECT_THAT(messages(load("[filesystem]\ndangerously_devices = \"/dev/fuse\"\n")),
              ElementsAre("test.toml:2:23: filesystem.dangerously_devices must be a list, like "
                          "[\"/dev/fuse\", { path = \"/dev/kvm\", optional = true }]; found a "
                          "string"));
  // The issue and other tools call it "devices": the key's name says the risk.
  EXPECT_THAT(messages(load("[filesystem]\ndevices = [\"/dev/fuse\"]\n")),
              ElementsAre("test.toml:2:1: unknown key \"devices\" in [filesystem]; it is "
                          "\"dangerously_devices\", named so because it is a risky opt-in "
                          "(policies/README.md)"));
}

TEST(OpenPolicy, UnknownNameSuggestsAndExplainsFiles) {
  auto r = open_policy("stric");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().to_string(),
            "find the policy (stric): no shipped policy is called \"stric\" (did you mean "
            "\"strict\"?); the shipped ones are \"default\", \"strict\" or \"dev\", and a file is "
            "named with a '/' or a .toml suffix (\"./stric.toml\")");
}

TEST(OpenPolicy, MissingFile) {
  auto r = open_policy("/nonexistent/brig.toml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().to_string(),
            "read the policy (/nonexistent/brig.toml): No such file or directory");
}

TEST(OpenPolicy, NamesAFile) {
  EXPECT_FALSE(names_a_file("default"));
  EXPECT_TRUE(names_a_file("default.toml"));
  EXPECT_TRUE(names_a_file("./default"));
  EXPECT_TRUE(names_a_file("/etc/brig/p"));
}

}  // namespace
}  // namespace brig::policy
