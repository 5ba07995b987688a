// The audit log: one JSON line per call that says who called what and how it
// ended, with env values never written and long arguments cut.
#include "server/session/audit_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include "server/sandbox/sandbox.h"
#include "tests/server/test_support.h"

namespace brig::session {
namespace {

using protocol::Json;

TEST(AuditLine, EnvValuesAreNeverWrittenAndLongStringsAreCut) {
  AuditRecord r;
  r.tool = "exec";
  r.arguments = {{"command", std::string(300, 'x')},
                 {"env", {{"OPENAI_API_KEY", "sk-secret-value"}}}};
  r.result = protocol::ToolResult::text("done");
  r.result->structured = Json{{"exit_code", 3}};
  const std::string line = audit_line(r, /*max_string=*/100);
  EXPECT_EQ(line.find("sk-secret-value"), std::string::npos) << line;
  const Json j = Json::parse(line);
  EXPECT_EQ(j.at("arguments").at("env").at("OPENAI_API_KEY"), "(not logged)");
  EXPECT_EQ(j.at("arguments").at("command"), std::string(100, 'x') + "… (200 bytes cut)");
  EXPECT_EQ(j.at("client"), "stdio");
  EXPECT_EQ(j.at("tool"), "exec");
  EXPECT_EQ(j.at("outcome"), "ok");
  EXPECT_EQ(j.at("exit_code"), 3);
  EXPECT_GT(j.at("bytes").get<int>(), 0);
}

TEST(AuditLine, AFailedCallKeepsItsErrorTextAndThePeer) {
  AuditRecord r;
  r.client = process::PeerCredentials{.pid = 7, .uid = 1000, .gid = 1000};
  r.tool = "read_file";
  r.outcome = AuditRecord::Outcome::error;
  r.result = protocol::ToolResult::error("denied: filesystem.hidden contains \"~/.ssh\"");
  const Json j = Json::parse(audit_line(r));
  EXPECT_EQ(j.at("outcome"), "error");
  EXPECT_EQ(j.at("client").at("uid"), 1000);
  EXPECT_NE(j.at("error").get<std::string>().find("filesystem.hidden"), std::string::npos);
}

class NoPeerContext : public tools::ToolContext {
 public:
  void progress(double, std::optional<double>, std::string) override {}
  void log(protocol::LogLevel, Json) override {}
  bool cancelled() const override { return false; }
  const std::optional<process::PeerCredentials>& peer() const override { return peer_; }

 private:
  std::optional<process::PeerCredentials> peer_;
};

TEST(AuditLog, AWrappedToolWritesOneLinePerCallIncludingFailures) {
  server::testing::TempDir dir;
  const std::string path = dir.file("audit.jsonl");
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log) << log.error().to_string();
  protocol::ToolDescriptor descriptor;
  descriptor.name = "t";
  tools::Tool tool = (*log)->wrap(
      tools::Tool{std::move(descriptor),
                  [](Json args, tools::ToolContext&) -> asio::awaitable<protocol::ToolResult> {
                    if (args.value("throw", false)) throw std::runtime_error("boom");
                    co_return protocol::ToolResult::text("fine");
                  }});
  asio::io_context io;
  NoPeerContext ctx;
  auto ok = asio::co_spawn(io, tool.handler(Json{{"a", 1}}, ctx), asio::use_future);
  auto thrown = asio::co_spawn(io, tool.handler(Json{{"throw", true}}, ctx), asio::use_future);
  io.run();
  EXPECT_EQ(ok.get().is_error, false);
  EXPECT_THROW(thrown.get(), std::runtime_error);

  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(path);
  std::vector<Json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("outcome"), "ok");
  EXPECT_EQ(lines[0].at("arguments"), (Json{{"a", 1}}));
  EXPECT_EQ(lines[1].at("outcome"), "failed");
  EXPECT_EQ(lines[1].at("error"), "boom");
}

// The log may sit where a jail writes (the workspace): a symlink planted at
// its path must not make brig append to the file it points to.
TEST(AuditLog, ASymlinkAtThePathIsRefusedAndItsTargetUntouched) {
  server::testing::TempDir dir;
  const std::string target = dir.file("precious");
  std::ofstream(target) << "keep\n";
  const std::string link = dir.file("audit.jsonl");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto log = AuditLog::open(link);
  ASSERT_FALSE(log);
  const std::string why = log.error().to_string();
  EXPECT_NE(why.find(link), std::string::npos) << why;
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  std::ifstream in(target);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "keep\n");
}

// A symlinked directory on the way is refused too: a jail could plant one
// in its workspace, and the log would be created wherever it points.
TEST(AuditLog, ASymlinkedDirectoryOnThePathIsRefused) {
  server::testing::TempDir dir;
  server::testing::TempDir elsewhere;
  const std::string link = dir.file("logs");
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), link.c_str()), 0);
  auto log = AuditLog::open(link + "/audit.jsonl");
  ASSERT_FALSE(log);
  EXPECT_NE(log.error().to_string().find("symbolic link"), std::string::npos)
      << log.error().to_string();
  struct stat st;
  EXPECT_NE(::lstat(elsewhere.file("audit.jsonl").c_str(), &st), 0) << "nothing created there";
}

// A reader of the log learns what the calls were confined by, and that
// without cgroups the memory limit held per process only.
TEST(AuditLog, TheStartLineSaysTheMemoryLimitIsPerProcessWithoutCgroups) {
  server::testing::TempDir dir;
  auto sandbox = sandbox::plan_sandbox("default", dir.path(), dir.path());
  ASSERT_TRUE(sandbox) << sandbox.error().to_string();
  sandbox->limits_enforcement = jail::LimitsEnforcement{jail::LimitsTier::rlimits, false, false,
                                                        "cgroup v2: no memory controller"};
  const std::string path = dir.file("audit.jsonl");
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log) << log.error().to_string();
  (*log)->write_start(sandbox::sandbox_facts(*sandbox));
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const Json j = Json::parse(line);
  EXPECT_EQ(j.at("event"), "start");
  EXPECT_EQ(j.at("policy"), "default");
  const std::string memory = j.at("limits").at("memory");
  EXPECT_NE(memory.find("per process, not enforced as a whole"), std::string::npos) << line;
  EXPECT_EQ(j.at("limits").at("tier"), "rlimits");
  EXPECT_EQ(j.at("limits").at("why_no_cgroup"), "cgroup v2: no memory controller");
}

// One request through the LLM proxy: its figures, never a body or a key.
TEST(AuditLog, AnLlmRequestIsOneLine) {
  server::testing::TempDir dir;
  const std::string path = dir.file("audit.jsonl");
  auto log = AuditLog::open(path);
  ASSERT_TRUE(log) << log.error().to_string();
  llm::LlmRecord r;
  r.jail = "job-7";
  r.route = "anthropic";
  r.method = "POST";
  r.path = "/anthropic/v1/messages";
  r.status = 200;
  r.bytes_up = 120;
  r.bytes_down = 4096;
  r.first_byte = std::chrono::milliseconds(85);
  r.duration = std::chrono::milliseconds(900);
  r.attempts = 2;
  r.input_tokens = 21;
  r.output_tokens = 42;
  (*log)->write_llm(r);
  r.status = 403;
  r.error = "that key is another jail's placeholder";
  r.first_byte.reset();
  r.input_tokens.reset();
  r.output_tokens.reset();
  (*log)->write_llm(r);
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  Json j = Json::parse(line);
  EXPECT_EQ(j.at("event"), "llm");
  EXPECT_EQ(j.at("jail"), "job-7");
  EXPECT_EQ(j.at("route"), "anthropic");
  EXPECT_EQ(j.at("status"), 200);
  EXPECT_EQ(j.at("bytes_down"), 4096);
  EXPECT_EQ(j.at("first_byte_ms"), 85);
  EXPECT_EQ(j.at("attempts"), 2);
  EXPECT_EQ(j.at("input_tokens"), 21);
  EXPECT_EQ(j.at("output_tokens"), 42);
  EXPECT_FALSE(j.contains("error"));
  ASSERT_TRUE(std::getline(in, line));
  j = Json::parse(line);
  EXPECT_EQ(j.at("status"), 403);
  EXPECT_EQ(j.at("error"), "that key is another jail's placeholder");
  EXPECT_FALSE(j.contains("first_byte_ms"));
  EXPECT_FALSE(j.contains("input_tokens"));
}

}  // namespace
}  // namespace brig::session
