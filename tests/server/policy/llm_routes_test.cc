// [[llm.routes]]: presets, a route of one's own, every refusal at its
// position, the planner's listener and Landlock port, and `policy show`.
#include "server/policy/llm_routes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "server/policy/loader.h"
#include "server/policy/render.h"
#include "server/policy/to_jail_spec.h"
#include "tests/server/policy/policy_test_util.h"

namespace brig::policy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::messages;

class LlmRoutes : public testing::PolicyText {};

TEST_F(LlmRoutes, PresetsFillTargetHeaderAndVariables) {
  auto r = load(R"([[llm.routes]]
provider = "anthropic"
key_env = "ANTHROPIC_API_KEY"

[[llm.routes]]
provider = "openai"
key_file = "~/.config/brig/openai.key"

[[llm.routes]]
provider = "gemini"
key_env = "GEMINI_KEY"
)");
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  const auto& routes = r->policy.llm.routes;
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0], (LlmRoute{"anthropic", "anthropic", "https://api.anthropic.com", "x-api-key",
                                 "ANTHROPIC_API_KEY", "", "", false, "ANTHROPIC_API_KEY",
                                 "ANTHROPIC_BASE_URL"}));
  EXPECT_EQ(routes[1], (LlmRoute{"openai", "openai", "https://api.openai.com/v1", "bearer", "",
                                 "/home/ada/.config/brig/openai.key", "", false, "OPENAI_API_KEY",
                                 "OPENAI_BASE_URL"}));
  EXPECT_EQ(routes[2].target, "https://generativelanguage.googleapis.com");
  EXPECT_EQ(routes[2].header, "x-goog-api-key");
  EXPECT_EQ(routes[2].base_url_variable, "GOOGLE_GEMINI_BASE_URL");
}

TEST_F(LlmRoutes, ARouteOfOnesOwn) {
  auto r = load(R"([[llm.routes]]
prefix  = "local"
target  = "https://llm.internal.example:8443/v1/"
header  = "Bearer"
key_file = "/etc/brig/local.key"
env     = { base_url = "OPENAI_BASE_URL", key = "OPENAI_API_KEY" }
ca_file = "/etc/brig/internal-ca.pem"
)");
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  EXPECT_EQ(r->policy.llm.routes.at(0),
            (LlmRoute{"", "local", "https://llm.internal.example:8443/v1/", "bearer", "",
                      "/etc/brig/local.key", "/etc/brig/internal-ca.pem", false, "OPENAI_API_KEY",
                      "OPENAI_BASE_URL"}));
}

TEST_F(LlmRoutes, OpenAiCompatibleNeedsItsTarget) {
  EXPECT_THAT(messages(load("[[llm.routes]]\nprovider = \"openai-compatible\"\nkey_env = \"K\"\n")),
              ElementsAre(HasSubstr("llm.routes[1] needs target (the openai-compatible preset has "
                                    "none)")));
}

TEST_F(LlmRoutes, RefusalsNameThePositionAndTheFix) {
  EXPECT_THAT(messages(load("[[llm.routes]]\nprovider = \"antropic\"\nkey_env = \"K\"\n")),
              ElementsAre("test.toml:2:12: llm.routes[1]: no provider preset is called "
                          "\"antropic\" (did you mean \"anthropic\"?); the presets are "
                          "\"anthropic\", \"openai\", \"gemini\" or \"openai-compatible\" (or "
                          "leave provider out and write target, header and env yourself)"));
  EXPECT_THAT(messages(load("[[llm.routes]]\nprovider = \"openai\"\nkey = \"sk-123\"\n")),
              ElementsAre(HasSubstr("test.toml:3:1: llm.routes[1]: a key is never written in a "
                                    "policy")));
  EXPECT_THAT(messages(load("[[llm.routes]]\nprovider = \"openai\"\n")),
              ElementsAre(HasSubstr("needs exactly one of key_env")));
  EXPECT_THAT(
      messages(load("[[llm.routes]]\nprovider = \"openai\"\nkey_env = \"A\"\nkey_file = \"/k\"\n")),
      ElementsAre(HasSubstr("needs exactly one of key_env")));
  EXPECT_THAT(messages(load("[[llm.routes]]\nprovider = \"openai\"\nkey_envv = \"A\"\n")),
              ElementsAre(HasSubstr("unknown key \"key_envv\" in llm.routes[1] (did you mean "
                                    "\"key_env\"?)")));
  EXPECT_THAT(
      messages(load("[[llm.routes]]\nprefix = \"a/b\"\ntarget = \"https://x\"\nheader = "
                    "\"bearer\"\nkey_env = \"K\"\nenv = { key = \"A\", base_url = \"B\" }\n")),
      ElementsAre(HasSubstr("must be one path segment")));
  EXPECT_THAT(messages(load("[[llm.routes]]\nprovider = \"openai\"\nheader = \"host\"\nkey_env = "
                            "\"K\"\n")),
              ElementsAre(HasSubstr("header = \"host\"")));
  EXPECT_THAT(messages(load("[[llm.routes]]\nprovider = \"openai\"\nkey_env = \"K\"\n"
                            "[[llm.routes]]\nprovider = \"openai\"\nkey_env = \"K\"\n")),
              ElementsAre(HasSubstr("another route already has prefix \"openai\"")));
  EXPECT_THAT(messages(load("[[llm.routes]]\nprovider = \"openai\"\nkey_env = \"K\"\n"
                            "[[llm.routes]]\nprovider = \"openai-compatible\"\nprefix = \"vllm\"\n"
                            "target = \"http://127.0.0.1:8000/v1\"\nkey_env = \"K\"\n")),
              ElementsAre(HasSubstr("the jail's variable OPENAI_API_KEY is already the route "
                                    "\"openai\"'s")));
}

TEST_F(LlmRoutes, ConflictsWithTheRestOfThePolicy) {
  EXPECT_THAT(messages(load("[network]\nmode = \"dangerously_host\"\n[[llm.routes]]\nprovider = "
                            "\"openai\"\nkey_env = \"K\"\n")),
              ElementsAre(HasSubstr("llm.routes need the jail's own network namespace")));
  EXPECT_THAT(messages(load("[environment]\npass = [\"MY_*\"]\n[[llm.routes]]\nprovider = "
                            "\"openai\"\nkey_env = \"MY_OPENAI_KEY\"\n")),
              ElementsAre(HasSubstr("environment.pass lets MY_OPENAI_KEY into the jail, and it "
                                    "holds the real key")));
  // Even under the route's own variable name: brig-worker's jail would get it.
  EXPECT_THAT(
      messages(load("[environment]\npass = [\"OPENAI_API_KEY\"]\n[[llm.routes]]\nprovider = "
                    "\"openai\"\nkey_env = \"OPENAI_API_KEY\"\n")),
      ElementsAre(HasSubstr("environment.pass lets OPENAI_API_KEY into the jail")));
  EXPECT_THAT(messages(load("[environment]\nset = { OPENAI_BASE_URL = \"x\" }\n[[llm.routes]]\n"
                            "provider = \"openai\"\nkey_env = \"K\"\n")),
              ElementsAre(HasSubstr("environment.set names OPENAI_BASE_URL")));
}

TEST(LlmTarget, Parses) {
  auto t = parse_llm_target("https://API.example.com:8443/v1/");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->tls);
  EXPECT_EQ(t->host, "api.example.com");
  EXPECT_EQ(t->port, 8443);
  EXPECT_EQ(t->path, "/v1");
  EXPECT_EQ(llm_host_header(*t), "api.example.com:8443");
  auto local = parse_llm_target("http://[::1]:8000");
  ASSERT_TRUE(local);
  EXPECT_FALSE(local->tls);
  EXPECT_EQ(local->host, "::1");
  EXPECT_EQ(local->path, "");
  EXPECT_EQ(llm_host_header(*local), "[::1]:8000");
  EXPECT_EQ(llm_host_header(*parse_llm_target("https://a.example")), "a.example");
}

TEST(LlmTarget, Refuses) {
  for (const char* bad :
       {"ftp://x", "https://", "https://u@x", "https://x/?q", "https://x:0", "https://x:99999",
        "https://x y", "http://api.openai.com/v1", "https://[::1"}) {
    EXPECT_FALSE(parse_llm_target(bad)) << bad;
  }
}

TEST_F(LlmRoutes, EveryModeButHostGetsTheListenerAndItsPort) {
  for (const char* mode : {"none", "proxy"}) {
    auto r =
        load(fmt::format("[network]\nmode = \"{}\"\nloopback_servers = false\n"
                         "[[llm.routes]]\nprovider = \"openai\"\nkey_env = \"K\"\n",
                         mode));
    ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
    Context ctx;
    ctx.workspace = "/srv/ws";
    ctx.cwd = "/srv/ws";
    auto spec = to_jail_spec(r->policy, ctx);
    ASSERT_TRUE(spec);
    ASSERT_FALSE(spec->listeners.empty()) << mode;
    EXPECT_EQ(spec->listeners.back(), llm_listener()) << mode;
    EXPECT_EQ(spec->listeners.size(), std::string_view(mode) == "proxy" ? 4u : 1u);
    const auto& ports = spec->landlock.connect_tcp;
    EXPECT_NE(std::find(ports.begin(), ports.end(), kLlmPort), ports.end()) << mode;
  }
  auto none = load("[network]\nmode = \"none\"\n");
  ASSERT_TRUE(none);
  Context ctx;
  ctx.workspace = "/srv/ws";
  EXPECT_TRUE(to_jail_spec(none->policy, ctx)->listeners.empty());
}

TEST(LlmEnvironment, PlaceholderAndBaseUrl) {
  LlmRoute r{"anthropic", "anthropic", "https://api.anthropic.com", "x-api-key",         "K", "",
             "",          false,       "ANTHROPIC_API_KEY",         "ANTHROPIC_BASE_URL"};
  EXPECT_THAT(llm_environment({r}, "00ff"),
              ElementsAre(std::pair<std::string, std::string>{"ANTHROPIC_API_KEY", "00ff"},
                          std::pair<std::string, std::string>{"ANTHROPIC_BASE_URL",
                                                              "http://127.0.0.1:3129/anthropic"}));
}

TEST_F(LlmRoutes, ShowLoadsBackToTheSamePolicy) {
  auto r = load(R"([[llm.routes]]
provider = "anthropic"
key_env = "ANTHROPIC_API_KEY"
[[llm.routes]]
prefix = "local"
target = "https://127.0.0.1:8443"
header = "x-custom-key"
key_file = "/etc/brig/local.key"
dangerously_skip_verify = true
env = { base_url = "LOCAL_URL", key = "LOCAL_KEY" }
)");
  ASSERT_TRUE(r);
  const std::string shown = render_policy(r->policy, {"test.toml"});
  EXPECT_THAT(shown, HasSubstr("DANGEROUS: the upstream's TLS is not verified"));
  auto again = load(shown);
  ASSERT_TRUE(again) << ::testing::PrintToString(messages(again)) << shown;
  // The preset's name is not written back (its values are): all else matches.
  auto expected = r->policy;
  for (LlmRoute& route : expected.llm.routes) route.provider.clear();
  EXPECT_EQ(again->policy, expected);
}

}  // namespace
}  // namespace brig::policy
