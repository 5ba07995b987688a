// LLM routes end to end (issue 14): a jail in network mode `none` (and
// `proxy`) calls a fake provider on the host's 127.0.0.1 through brig's LLM
// proxy on its own 127.0.0.1:3129, with the placeholder brig put in its
// environment. The real key must reach the provider, in the route's header,
// and nothing the jail can read: its environment, /proc (its own and its
// init's), the files it can see; nor brig's output or the audit log. Each
// refusal is paired with an allowed request in the same jail, and the fake
// provider records what reached it. Runs as root and as an unprivileged user
// (scripts/test.sh).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tests/security/security_support.h"
#include "tests/server/llm/fake_upstream.h"
#include "tests/server/test_support.h"

namespace brig::security::test {
namespace {

using Json = server::testing::Json;
using ::testing::HasSubstr;
using ::testing::Not;

// Distinctive, so that any copy of it anywhere is found.
constexpr const char* kRealKey = "sk-brig-REALKEY-3b8e1f0c9a7d";

std::string read_host_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class LlmTest : public SecurityTest {
 protected:
  void SetUp() override {
    SecurityTest::SetUp();
    if (HasFatalFailure()) return;
    upstream_.emplace();
    ASSERT_NE(upstream_->port(), 0);
  }
  void TearDown() override {
    upstream_.reset();
    SecurityTest::TearDown();
  }

  std::string policy(const std::string& mode) {
    return policy_file("llm-" + mode, fmt::format(R"(extends = "default"
[network]
mode = "{}"
[[llm.routes]]
provider = "openai-compatible"
prefix = "local"
target = "http://127.0.0.1:{}/v1"
key_env = "BRIG_TEST_LLM_KEY"
)",
                                                  mode, upstream_->port()));
  }

  std::optional<llm::testing::FakeUpstream> upstream_;
};

// What the jail runs: a call with its placeholder, one with a forged key,
// and every place the real key could show.
const std::string kScript = R"(
curl -sS --max-time 20 -H "Authorization: Bearer $OPENAI_API_KEY" -H 'Content-Type: application/json' -d '{}' "$OPENAI_BASE_URL/json"; echo
echo "allowed=$?"
curl -sS --max-time 20 -o /dev/null -w 'forged=%{http_code}\n' -H 'Authorization: Bearer sk-guess' "$OPENAI_BASE_URL/json"
echo "base=$OPENAI_BASE_URL"
echo "key_len=${#OPENAI_API_KEY}"
# The pattern is spelled apart, and kept where the search does not look:
# the script's own command line and grep's must not match it.
printf 'REAL%s' KEY > /dev/shm/pattern
found=0
env | grep -qF -f /dev/shm/pattern && found=$((found+1))
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
  tr '\0' '\n' < "$f" 2>/dev/null | grep -qF -f /dev/shm/pattern && found=$((found+1))
done
grep -rqsF -f /dev/shm/pattern /tmp "$HOME" . 2>/dev/null && found=$((found+1))
echo "found=$found"
)";

TEST_F(LlmTest, BrigRunSwapsTheKeyAndTheJailNeverSeesIt) {
  for (const std::string mode : {"none", "proxy"}) {
    SCOPED_TRACE(mode);
    const std::size_t before = upstream_->requests().size();
    const BrigRan ran = brig_run({"--policy", policy(mode), "--", "sh", "-c", kScript},
                                 {std::string("BRIG_TEST_LLM_KEY=") + kRealKey});
    ASSERT_EQ(ran.status, 0) << ran.out << ran.err;
    EXPECT_THAT(ran.out, HasSubstr("prompt_tokens")) << ran.out << ran.err;
    EXPECT_THAT(ran.out, HasSubstr("allowed=0"));
    EXPECT_THAT(ran.out, HasSubstr("forged=401"));
    EXPECT_THAT(ran.out, HasSubstr("base=http://127.0.0.1:3129/local"));
    EXPECT_THAT(ran.out, HasSubstr("key_len=32"));
    EXPECT_THAT(ran.out, HasSubstr("found=0"));
    EXPECT_THAT(ran.out + ran.err, Not(HasSubstr(kRealKey)));
    // The refusal is named on brig run's stderr, without the key.
    EXPECT_THAT(ran.err, HasSubstr("not this jail's placeholder"));
    // Only the allowed call reached the provider, with the real key.
    const auto seen = upstream_->requests();
    ASSERT_EQ(seen.size(), before + 1) << ran.out << ran.err;
    EXPECT_EQ(seen.back().path, "/v1/json");
    EXPECT_EQ(seen.back().headers.at("authorization"), std::string("Bearer ") + kRealKey);
  }
}

TEST_F(LlmTest, AMissingKeyRefusesTheRunNamingRouteAndVariable) {
  const BrigRan ran = brig_run({"--policy", policy("none"), "--", "true"});
  EXPECT_EQ(ran.status, 125);
  EXPECT_THAT(ran.err, HasSubstr("llm route \"local\""));
  EXPECT_THAT(ran.err, HasSubstr("BRIG_TEST_LLM_KEY is not set"));
}

// Without a route the jail has no listener there: the same call fails to
// connect (the control that the listener is the routes' doing).
TEST_F(LlmTest, NoRouteNoListener) {
  const std::string plain = policy_file("plain", "extends = \"default\"\n");
  const BrigRan ran =
      brig_run({"--policy", plain, "--", "sh", "-c",
                "curl -sS --max-time 5 http://127.0.0.1:3129/local/json; echo \"rc=$?\""});
  EXPECT_THAT(ran.out, HasSubstr("rc=7")) << ran.out << ran.err;
  EXPECT_TRUE(upstream_->requests().empty());
}

// The same through the MCP `exec` tool of `brig serve`: the key lives in
// brig-server, each call's jail gets its own placeholder, and the audit log
// records each request with its token counts and never the key.
TEST_F(LlmTest, ServeExecAndTheAuditLog) {
  namespace st = server::testing;
  jail::test::TempDir logs;  // outside the workspace, where no jail writes
  const std::string audit = logs.path() + "/audit.jsonl";
  std::vector<Json> replies;
  std::string server_err;
  ::setenv("BRIG_TEST_LLM_KEY", kRealKey, 1);
  {
    st::Child server({jail::test::bin_dir() + "/brig", "serve", "--workspace", workspace(),
                      "--policy", policy("none"), "--audit-log", audit},
                     st::Child::Options{.cwd = workspace()});
    st::LineClient client = server.take_client();
    ASSERT_TRUE(st::initialize(client));
    const std::vector<std::string> commands = {
        kScript,
        "echo $OPENAI_API_KEY",
        "echo $OPENAI_API_KEY",
    };
    int id = 1;
    for (const std::string& command : commands) {
      ASSERT_TRUE(client.send(st::tool_call(id, "exec", {{"command", command}})));
      const auto reply = client.read_response(id++, nullptr, std::chrono::seconds(60));
      ASSERT_TRUE(reply) << command;
      replies.push_back((*reply)["result"]);
    }
    // brig-server read the key from its environment and wiped it there.
    const std::string environ =
        read_host_file("/proc/" + std::to_string(server.pid()) + "/environ");
    EXPECT_NE(environ.find("PATH="), std::string::npos);  // it was readable
    EXPECT_EQ(environ.find(kRealKey), std::string::npos);
    client.close_write();
    EXPECT_TRUE(server.wait());
    server_err = server.read_stderr(std::chrono::seconds(5));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (::waitpid(-1, nullptr, WNOHANG) >= 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::unsetenv("BRIG_TEST_LLM_KEY");
  ASSERT_EQ(replies.size(), 3u);
  const std::string out = st::result_stream(replies[0], "stdout");
  EXPECT_THAT(out, HasSubstr("prompt_tokens")) << replies[0].dump();
  EXPECT_THAT(out, HasSubstr("forged=401"));
  EXPECT_THAT(out, HasSubstr("found=0"));
  // Each jail its own placeholder.
  const std::string p1 = st::result_stream(replies[1], "stdout"),
                    p2 = st::result_stream(replies[2], "stdout");
  EXPECT_EQ(p1.size(), 33u) << p1;
  EXPECT_NE(p1, p2);
  for (const Json& r : replies) EXPECT_THAT(r.dump(), Not(HasSubstr(kRealKey)));
  EXPECT_THAT(server_err, Not(HasSubstr(kRealKey)));

  const std::string log = read_host_file(audit);
  EXPECT_THAT(log, Not(HasSubstr(kRealKey)));
  std::vector<Json> llm;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "llm") llm.push_back(j);
  }
  ASSERT_EQ(llm.size(), 2u) << log;
  EXPECT_EQ(llm[0].value("route", ""), "local");
  EXPECT_EQ(llm[0].value("status", 0), 200);
  EXPECT_EQ(llm[0].value("input_tokens", 0), 7);
  EXPECT_EQ(llm[0].value("output_tokens", 0), 9);
  EXPECT_TRUE(llm[0].contains("first_byte_ms"));
  EXPECT_EQ(llm[1].value("status", 0), 401);
  const auto seen = upstream_->requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].headers.at("authorization"), std::string("Bearer ") + kRealKey);
}

}  // namespace
}  // namespace brig::security::test
