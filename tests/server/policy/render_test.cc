#include "server/policy/render.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/policy/builtin.h"
#include "server/policy/loader.h"
#include "tests/server/policy/policy_test_util.h"

namespace brig::policy {
namespace {

using testing::messages;
using testing::source;

TEST(Render, WritesEveryKey) {
  Policy p;
  p.description = "costs $5 \"quoted\"";
  p.filesystem.read_only = {{"/usr", false}, {"/lib64", true}};
  p.filesystem.hidden = {"/h/.ssh"};
  p.filesystem.tmp_size = 512u << 20;
  p.filesystem.dangerously_devices = {{"/dev/fuse", false}, {"/dev/net/tun", true}};
  p.environment.pass = {"TERM"};
  p.environment.set = {{"HOME", "/h"}, {"ODD", "a$b\tc"}};
  p.limits.memory_bytes = uint64_t{2} << 30;
  p.limits.cpu_seconds = 90;
  p.limits.wall_time = std::chrono::minutes(30);
  p.disabled_tools = {"exec"};
  p.network.mode = NetworkMode::proxy;
  p.network.rules.allow = {*parse_net_rule("PyPI.org"), *parse_net_rule("[::1]:8080")};
  p.network.rules.hosts = {{"db.test", *parse_address("10.1.2.7")},
                           {"v6.test", *parse_address("fd00::7")}};
  EXPECT_EQ(render_policy(p, {"mine.toml", "<built-in>/default.toml"}),
            R"(# The fully resolved policy of mine.toml, extending <built-in>/default.toml,
# with ~ and $VARS expanded for this user. It loads as it is.
description = "costs $$5 \"quoted\""

[filesystem]
workspace = "read_write"
read_only = [
  "/usr",
  { path = "/lib64", optional = true },
]
read_write = []
hidden = [
  "/h/.ssh",
]
tmp_size = "512MiB"
private_home = true
home_size = 0  # the kernel default: half of RAM
dangerously_writable_git = false
dangerously_devices = [
  "/dev/fuse",
  { path = "/dev/net/tun", optional = true },
]

[environment]
pass = ["TERM"]

[environment.set]
HOME = "/h"
ODD = "a$$b\tc"

[limits]
memory = "2GiB"
pids = "unlimited"
cpu_time = "1m30s"
file_size = "unlimited"
open_files = "unlimited"
wall_time = "30m"

[seccomp]
enabled = true

[landlock]
enabled = true

[namespaces]
dangerously_share = []

[network]
mode = "proxy"
loopback_servers = false
allow = ["PyPI.org", "[::1]:8080"]
deny = []

[network.hosts]
"db.test" = "10.1.2.7"
"v6.test" = "fd00::7"

[llm]
routes = []

[identity]
as_root = "mapped"
uid = 65534
gid = 65534
dangerously_unmask_root_secrets = false

[require]
layers = ["namespaces", "landlock", "seccomp"]

[tools]
disabled = ["exec"]
)");
}

// `brig policy show` prints text that loads back to the same policy.
TEST(Render, ShippedPoliciesRoundTrip) {
  EnvMap env;
  Expansion x{"/home/ada", env};
  for (const BuiltinPolicy& b : builtin_policies()) {
    auto loaded = load_policy(b.name, x);
    ASSERT_TRUE(loaded) << b.name;
    const std::string text = render_policy(loaded->policy, loaded->chain);
    auto again = load_policy(source(text), x);
    ASSERT_TRUE(again) << b.name << ": " << ::testing::PrintToString(messages(again)) << "\n"
                       << text;
    EXPECT_EQ(again->policy, loaded->policy) << b.name;
  }
}

TEST(Render, NetworkRulesRoundTrip) {
  Policy p;
  p.network.mode = NetworkMode::proxy;
  for (const char* text : {"pypi.org", "*.PythonHosted.org.", "github.com:22", "10.1.2.0/24:5432",
                           "[fd00::/8]:443", "::1"})
    p.network.rules.allow.push_back(*parse_net_rule(text));
  p.network.rules.deny = {*parse_net_rule("*.internal.example"), *parse_net_rule("10.1.2.9")};
  p.network.rules.hosts = {{"db.test", *parse_address("10.1.2.7")},
                           {"x.y", *parse_address("::ffff:10.0.0.1")}};
  EnvMap env;
  Expansion x{"/home/ada", env};
  const std::string text = render_policy(p, {});
  auto again = load_policy(source(text), x);
  ASSERT_TRUE(again) << ::testing::PrintToString(messages(again)) << "\n" << text;
  EXPECT_EQ(again->policy, p) << text;
}

TEST(Render, OddValuesRoundTrip) {
  Policy p;
  p.description = "tab\there, newline\nthere, \x01, back\\slash";
  p.environment.set = {{"V", "$HOME:x"}};
  p.dangerously_share = {SharedNamespace::uts};
  p.network.mode = NetworkMode::dangerously_host;
  p.identity.as_root = RootIdentity::user;
  p.limits.pids = 5;
  p.filesystem.dangerously_devices = {{"/dev/dri", true}, {"/dev/kvm", false}};
  EnvMap env;
  Expansion x{"/home/ada", env};
  auto again = load_policy(source(render_policy(p, {})), x);
  ASSERT_TRUE(again) << ::testing::PrintToString(messages(again));
  EXPECT_EQ(again->policy, p);
}

}  // namespace
}  // namespace brig::policy
