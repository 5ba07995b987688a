// plan_sandbox and the instructions a model reads about its sandbox.
#include "server/sandbox/sandbox.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "server/policy/writable.h"
#include "tests/server/test_support.h"

namespace brig::sandbox {
namespace {

using server::testing::TempDir;

TEST(Sandbox, DefaultPlansAWritableWorkspaceWithoutNetworkAndSaysSo) {
  TempDir ws;
  auto sandbox = plan_sandbox("default", ws.path(), ws.path());
  ASSERT_TRUE(sandbox) << sandbox.error().to_string();
  EXPECT_EQ(sandbox->workspace(), ws.path());
  EXPECT_FALSE(sandbox->spec.mounts.empty());
  EXPECT_EQ(sandbox->spawner, nullptr) << "the caller starts the spawner";
  const std::string text = sandbox_instructions(*sandbox);
  EXPECT_NE(text.find("\"default\""), std::string::npos) << text;
  EXPECT_NE(text.find(ws.path() + " (read-write)"), std::string::npos) << text;
  EXPECT_NE(text.find("no network"), std::string::npos) << text;
  EXPECT_NE(text.find("Limits: "), std::string::npos) << text;
}

TEST(Sandbox, TheNetworkTextSaysWhatTheProxyAllows) {
  policy::Policy p;
  EXPECT_EQ(network_text(p), "no network, only the jail's own loopback");
  p.network.mode = policy::NetworkMode::proxy;
  EXPECT_EQ(network_text(p),
            "only through brig's egress proxy (HTTP and CONNECT on 127.0.0.1:3128, DNS on "
            "127.0.0.1:53), to nothing (ports 80 and 443 unless one is given); anything else is "
            "refused");
  p.network.rules.allow = {*policy::parse_net_rule("pypi.org"),
                           *policy::parse_net_rule("github.com:22")};
  p.network.rules.deny = {*policy::parse_net_rule("evil.pypi.org")};
  EXPECT_EQ(network_text(p),
            "only through brig's egress proxy (HTTP and CONNECT on 127.0.0.1:3128, DNS on "
            "127.0.0.1:53), to pypi.org, github.com:22, except evil.pypi.org (ports 80 and 443 "
            "unless one is given); anything else is refused");
  p.network.mode = policy::NetworkMode::dangerously_host;
  EXPECT_EQ(network_text(p),
            "DANGEROUS: the host's network, unrestricted (network.mode = \"dangerously_host\")");
}

// The finding this guards against: without a memory cgroup one exec held
// 5.9 GiB against "4GiB memory" while the instructions claimed the limit.
TEST(Sandbox, WithoutCgroupsTheInstructionsSayTheMemoryLimitIsPerProcess) {
  TempDir ws;
  auto sandbox = plan_sandbox("default", ws.path(), ws.path());
  ASSERT_TRUE(sandbox) << sandbox.error().to_string();
  ASSERT_TRUE(sandbox->policy.limits.memory_bytes);
  sandbox->limits_enforcement = jail::LimitsEnforcement{jail::LimitsTier::rlimits, false, false,
                                                        "cgroup v2: no memory controller"};
  const std::string text = sandbox_instructions(*sandbox);
  EXPECT_NE(text.find("memory per process, not enforced as a whole"), std::string::npos) << text;
  EXPECT_NE(text.find("processes per user (RLIMIT_NPROC), not a cgroup"), std::string::npos)
      << text;

  sandbox->limits_enforcement =
      jail::LimitsEnforcement{jail::LimitsTier::cgroup_v1, true, true, ""};
  const std::string whole = sandbox_instructions(*sandbox);
  EXPECT_EQ(whole.find("not enforced"), std::string::npos) << whole;
  EXPECT_NE(whole.find("memory"), std::string::npos) << whole;
}

TEST(Sandbox, StrictSaysTheWorkspaceIsReadOnly) {
  TempDir ws;
  auto sandbox = plan_sandbox("strict", ws.path(), ws.path());
  ASSERT_TRUE(sandbox) << sandbox.error().to_string();
  EXPECT_NE(sandbox_instructions(*sandbox).find("(read-only)"), std::string::npos);
}

TEST(Sandbox, DisabledToolsAreNamedAndABadPolicyListsEveryError) {
  TempDir ws;
  TempDir policies;
  const std::string good = policies.file("p.toml");
  std::ofstream(good) << "extends = \"default\"\n[tools]\ndisabled = [\"exec\"]\n";
  auto sandbox = plan_sandbox(good, ws.path(), ws.path());
  ASSERT_TRUE(sandbox) << sandbox.error().to_string();
  EXPECT_NE(sandbox_instructions(*sandbox).find("Switched off by the policy: exec"),
            std::string::npos);

  const std::string bad = policies.file("bad.toml");
  std::ofstream(bad) << "[filesystem]\nworkspce = 1\n[limits]\npids = \"many\"\n";
  auto refused = plan_sandbox(bad, ws.path(), ws.path());
  ASSERT_FALSE(refused);
  const std::string why = refused.error().to_string();
  EXPECT_NE(why.find("workspce"), std::string::npos) << why;
  EXPECT_NE(why.find("pids"), std::string::npos) << why;
}

// A policy its own jail could rewrite would decide the next jail: refused,
// naming the file; the same file outside every writable path is fine.
TEST(Sandbox, PolicyFileInTheWorkspaceIsRefused) {
  TempDir ws;
  const std::string inside = ws.file("p.toml");
  std::ofstream(inside) << "extends = \"default\"\n";
  auto refused = plan_sandbox(inside, ws.path(), ws.path());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().to_string().find(inside), std::string::npos)
      << refused.error().to_string();
  EXPECT_NE(refused.error().to_string().find("could rewrite it"), std::string::npos);

  // A read-only workspace cannot be written: a policy there is fine.
  std::ofstream(ws.file("ro.toml")) << "extends = \"strict\"\n";
  EXPECT_TRUE(plan_sandbox(ws.file("ro.toml"), ws.path(), ws.path()));
}

// A read_write path that is a host symlink binds its real directory: a
// policy file there is as writable as one named through the link.
TEST(Sandbox, PolicyFileUnderASymlinkedWritablePathIsRefused) {
  TempDir ws;
  TempDir real;
  TempDir links;
  const std::string link = links.file("data");
  ASSERT_EQ(::symlink(real.path().c_str(), link.c_str()), 0);
  const std::string policy = real.file("p.toml");
  std::ofstream(policy) << "extends = \"default\"\n[filesystem]\nread_write_add = [\"" << link
                        << "\"]\n";
  auto refused = plan_sandbox(policy, ws.path(), ws.path());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().to_string().find("could rewrite it"), std::string::npos)
      << refused.error().to_string();
}

// A hidden path under a writable bind reached through a symlink is as weak
// as one under the bind as named, and the instructions say so.
TEST(Sandbox, AHiddenPathUnderASymlinkedWritableBindIsNamedWeak) {
  TempDir ws;
  TempDir real;
  TempDir links;
  TempDir policies;
  const std::string link = links.file("data");
  ASSERT_EQ(::symlink(real.path().c_str(), link.c_str()), 0);
  std::ofstream(policies.file("p.toml"))
      << "extends = \"default\"\n[filesystem]\nread_write_add = [\"" << link
      << "\"]\nhidden_add = [\"" << real.file("token") << "\"]\n";
  auto sandbox = plan_sandbox(policies.file("p.toml"), ws.path(), ws.path());
  ASSERT_TRUE(sandbox) << sandbox.error().to_string();
  const auto weak = policy::weak_hidden_paths(sandbox->spec);
  ASSERT_EQ(weak.size(), 1u);
  EXPECT_NE(weak[0].find(real.file("token")), std::string::npos) << weak[0];
}

// An audit log the jails could write is refused, as named or through "..".
TEST(Sandbox, AnAuditLogInTheWorkspaceIsRefused) {
  TempDir ws;
  auto sandbox = plan_sandbox("default", ws.path(), ws.path());
  ASSERT_TRUE(sandbox) << sandbox.error().to_string();
  for (const std::string& path : {ws.file("audit.log"), ws.path() + "/sub/../audit.log"}) {
    auto refused = policy::refuse_writable_audit_log(path, sandbox->spec);
    ASSERT_FALSE(refused) << path;
    EXPECT_NE(refused.error().to_string().find("could rewrite or truncate it"), std::string::npos)
        << refused.error().to_string();
  }
  EXPECT_TRUE(policy::refuse_writable_audit_log("/var/log/brig-audit.log", sandbox->spec));
}

// The instructions say what git can do in the jail, and which hidden paths
// cannot hold.
TEST(Sandbox, InstructionsSayWhatGitMayWriteAndNameWeakHiddenPaths) {
  TempDir ws;
  TempDir policies;
  std::ofstream(policies.file("p.toml"))
      << "extends = \"default\"\n[filesystem]\nhidden_add = [\"" << ws.path() << "/.env\"]\n";
  auto sandbox = plan_sandbox(policies.file("p.toml"), ws.path(), ws.path());
  ASSERT_TRUE(sandbox) << sandbox.error().to_string();
  const std::string text = sandbox_instructions(*sandbox);
  EXPECT_NE(text.find("git works in exec"), std::string::npos) << text;
  EXPECT_NE(text.find("(config, hooks/, info/, modules/) is read-only"), std::string::npos) << text;
  EXPECT_NE(text.find(ws.path() + "/.env (under the writable " + ws.path() + ")"),
            std::string::npos)
      << text;
}

// The model is told where its LLM calls go, and that the key it sees is a
// placeholder; the audit start line lists the routes, never a key.
TEST(Sandbox, LlmRoutesAreInTheInstructions) {
  policy::Policy p;
  EXPECT_EQ(llm_text(p), "");
  policy::LlmRoute r;
  r.provider = "anthropic";
  r.prefix = "anthropic";
  r.target = "https://api.anthropic.com";
  r.header = "x-api-key";
  r.key_env = "MY_KEY";
  r.key_variable = "ANTHROPIC_API_KEY";
  r.base_url_variable = "ANTHROPIC_BASE_URL";
  p.llm.routes.push_back(r);
  const std::string text = llm_text(p);
  EXPECT_NE(text.find("127.0.0.1:3129"), std::string::npos) << text;
  EXPECT_NE(text.find("$ANTHROPIC_BASE_URL (with $ANTHROPIC_API_KEY) to https://api.anthropic.com"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("placeholder"), std::string::npos) << text;
  EXPECT_EQ(text.find("MY_KEY"), std::string::npos) << text;
  Sandbox sandbox;
  sandbox.policy = p;
  sandbox.policy_name = "test";
  EXPECT_NE(sandbox_instructions(sandbox).find(text), std::string::npos);
  const auto facts = sandbox_facts(sandbox);
  EXPECT_EQ(facts.at("llm_routes").at(0).at("prefix"), "anthropic");
  EXPECT_EQ(facts.dump().find("MY_KEY"), std::string::npos);
}

}  // namespace
}  // namespace brig::sandbox
