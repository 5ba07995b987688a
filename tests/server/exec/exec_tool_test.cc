// The exec and job tools end to end: a real brig-spawner, jails planned from
// the shipped default policy on a temporary workspace, the tool handlers
// driven through the Registry with a recording ToolContext.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <numeric>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>

#include "protocol/json_rpc.h"
#include "protocol/schema_check.h"
#include "protocol/text.h"
#include "server/exec/exec_args.h"
#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"
#include "server/tools/exec_tools.h"
#include "tests/server/exec/exec_test_support.h"
#include "tests/server/test_support.h"

namespace brig::exec {
namespace {

using protocol::Json;
using protocol::ToolResult;
using testing::Call;
using testing::FakeContext;
using ::testing::HasSubstr;
using testing::kDeadline;
using ::testing::Not;
using testing::run_until;

// A host variable the default policy does not pass: it must stay out.
constexpr const char* kHostOnly = "BRIG_EXEC_TEST_HOST_ONLY";

class ExecToolTest : public ::testing::Test {
 protected:
  explicit ExecToolTest(JobLimits limits = {}) : jobs_(limits) {}

  void SetUp() override {
    ::setenv(kHostOnly, "leaked", 1);
    policy::EnvMap env = policy::current_environment();
    const std::string home = policy::caller_home(env);
    auto loaded = policy::load_policy("default", policy::Expansion{home, env});
    ASSERT_TRUE(loaded) << loaded.error().front().to_string();
    sandbox_.policy = loaded->policy;
    sandbox_.policy_name = "default";
    sandbox_.context = policy::caller_context(ws_.path(), ws_.path(), env, home);
    auto spec = policy::to_jail_spec(sandbox_.policy, sandbox_.context);
    ASSERT_TRUE(spec) << spec.error().to_string();
    sandbox_.spec = *spec;
    sandbox_.env = policy::jail_environment(sandbox_.policy, sandbox_.context);
    auto spawner = spawner::Spawner::start(io_.get_executor(),
                                           server::testing::sibling_binary("brig-spawner"));
    ASSERT_TRUE(spawner) << spawner.error().to_string();
    sandbox_.spawner = *spawner;
    principals_.emplace(io_.get_executor(), sandbox_, /*own_workers=*/nullptr);
    ASSERT_TRUE(tools::register_exec_tools(registry_, *principals_, jobs_));
  }

  void TearDown() override {
    stop_jobs();
    EXPECT_EQ(jobs_.running(), 0u) << "a job outlived JobTable::stop";
    ::unsetenv(kHostOnly);
  }

  // What the server does at shutdown.
  void stop_jobs() {
    bool stopped = false;
    asio::co_spawn(io_, jobs_.stop(kDeadline), [&](std::exception_ptr) { stopped = true; });
    EXPECT_TRUE(run_until(io_, [&] { return stopped; }));
  }

  const tools::Tool& tool(std::string_view name) { return *registry_.find(name); }

  // Runs one call to its end.
  ToolResult call(std::string_view name, Json args, FakeContext& ctx) {
    Call c;
    testing::start_call(io_, tool(name), std::move(args), ctx, c);
    EXPECT_TRUE(run_until(io_, [&] { return c.done; })) << name << " did not return in time";
    if (c.error) std::rethrow_exception(c.error);
    ToolResult r = c.result.value_or(ToolResult::error("no result"));
    if (r.structured) {
      EXPECT_EQ(protocol::check_schema(*r.structured, *tool(name).descriptor.output_schema,
                                       "structuredContent"),
                std::nullopt)
          << r.structured->dump();
    }
    return r;
  }
  ToolResult call(std::string_view name, Json args) {
    FakeContext ctx;
    return call(name, std::move(args), ctx);
  }
  ToolResult exec(Json args) { return call("exec", std::move(args)); }

  std::shared_ptr<Job> only_job() {
    auto list = jobs_.list(::geteuid());
    return list.size() == 1 ? list.front() : nullptr;
  }

  asio::io_context io_;
  server::testing::TempDir ws_;
  sandbox::Sandbox sandbox_;
  std::optional<tools::Principals> principals_;
  JobTable jobs_;
  tools::Registry registry_;
};

std::string text_of(const ToolResult& r) {
  std::string out;
  for (const auto& block : r.content) out += block.to_json().value("text", std::string());
  return out;
}

TEST_F(ExecToolTest, RegistersExecThenJob) {
  ASSERT_EQ(registry_.size(), 2u);
  EXPECT_EQ(registry_.list()[0].name, "exec");
  EXPECT_EQ(registry_.list()[1].name, "job");
  EXPECT_EQ(registry_.list()[0].input_schema["additionalProperties"], false);
  EXPECT_EQ(registry_.list()[1].input_schema["additionalProperties"], false);
}

TEST_F(ExecToolTest, APolicyCanSwitchThemOff) {
  tools::Registry none;
  sandbox_.policy.disabled_tools = {"exec"};
  ASSERT_TRUE(tools::register_exec_tools(none, *principals_, jobs_));
  EXPECT_EQ(none.size(), 0u);  // job goes with exec
  tools::Registry no_job;
  sandbox_.policy.disabled_tools = {"job"};
  ASSERT_TRUE(tools::register_exec_tools(no_job, *principals_, jobs_));
  ASSERT_EQ(no_job.size(), 1u);
  EXPECT_EQ(no_job.list()[0].name, "exec");
}

TEST_F(ExecToolTest, ShutdownKillsEveryJob) {
  exec({{"command", "exec sleep 300"}, {"yield_after", 0}});
  FakeContext other(process::PeerCredentials{.pid = 1, .uid = ::geteuid() + 4242, .gid = 0});
  call("exec", {{"command", "exec sleep 300"}, {"yield_after", 0}}, other);
  std::vector<pid_t> inits;
  for (const auto& job : jobs_.list(::geteuid())) inits.push_back(job->pid());
  for (const auto& job : jobs_.list(::geteuid() + 4242)) inits.push_back(job->pid());
  ASSERT_EQ(inits.size(), 2u);
  EXPECT_EQ(jobs_.running(), 2u);
  stop_jobs();
  EXPECT_EQ(jobs_.running(), 0u);
  for (pid_t pid : inits) {
    EXPECT_TRUE(run_until(io_, [&] { return testing::process_gone(pid); })) << pid;
  }
}

TEST_F(ExecToolTest, CancellingAJobWaitLeavesTheJobRunning) {
  ToolResult r = exec({{"command", "exec sleep 300"}, {"yield_after", 0}});
  FakeContext ctx;
  Call c;
  testing::start_call(io_, tool("job"), {{"action", "wait"}, {"id", (*r.structured)["job"]}}, ctx,
                      c);
  run_until(
      io_, [] { return false; }, std::chrono::milliseconds(200));  // under way
  testing::cancel_call(ctx, c);
  ASSERT_TRUE(run_until(io_, [&] { return c.done; }));
  EXPECT_TRUE(c.error);
  ASSERT_NE(only_job(), nullptr);
  EXPECT_FALSE(only_job()->finished());
  EXPECT_FALSE(testing::process_gone(only_job()->pid()));
}

TEST_F(ExecToolTest, EchoesStdoutAndStderr) {
  ToolResult r = exec({{"command", "echo out; echo err >&2"}});
  EXPECT_FALSE(r.is_error) << text_of(r);
  const Json& s = *r.structured;
  EXPECT_EQ(s["status"], "exited");
  EXPECT_EQ(s["exit_code"], 0);
  EXPECT_EQ(s["timed_out"], false);
  // The output is in the text block only (docs/tools.md, "One copy").
  EXPECT_FALSE(s.contains("stdout"));
  EXPECT_FALSE(s.contains("stderr"));
  EXPECT_EQ(s["stdout_bytes"], 4);
  EXPECT_EQ(testing::stream_text(r, "stdout"), "out\n");
  EXPECT_EQ(testing::stream_text(r, "stderr"), "err\n");
  EXPECT_EQ(s["stdout_dropped"], 0);
  EXPECT_FALSE(s.contains("job"));  // nothing left to read: the job is gone
  EXPECT_EQ(jobs_.size(), 0u);
  EXPECT_THAT(text_of(r), HasSubstr("exit code 0"));
  EXPECT_THAT(text_of(r), HasSubstr("--- stdout ---\nout\n"));
}

// git commits through exec reach the workspace's repository; what the git
// layer could not write back is said in the result (docs/jail.md, "git").
TEST_F(ExecToolTest, GitCommitsReachTheWorkspaceAndUnsavedStateIsReported) {
  const std::string init = "cd '" + ws_.path() +
                           "' && git init -q -b main . && git -c user.name=a -c "
                           "user.email=a@example.invalid commit -q --allow-empty -m one";
  ASSERT_EQ(std::system(init.c_str()), 0);
  ToolResult r = exec({{"command",
                        "git -c user.name=a -c user.email=a@example.invalid commit -q "
                        "--allow-empty -m two && git checkout -qb topic"}});
  ASSERT_FALSE(r.is_error) << text_of(r);
  EXPECT_FALSE(r.structured->contains("warning")) << r.structured->dump();
  std::ifstream head(ws_.path() + "/.git/HEAD");
  std::string line;
  std::getline(head, line);
  EXPECT_EQ(line, "ref: refs/heads/topic");

  r = exec({{"command", "rm .git/HEAD && ln -s /etc/passwd .git/HEAD"}});
  ASSERT_FALSE(r.is_error) << text_of(r);
  EXPECT_THAT((*r.structured)["warning"].get<std::string>(),
              HasSubstr("could not be written back"));
  EXPECT_THAT(text_of(r),
              HasSubstr("brig: 1 of the changes the command made in the workspace's .git"));
}

TEST_F(ExecToolTest, CallsRunConcurrentlyEachInItsOwnJail) {
  // The first waits for a file that the last creates: they can only all
  // finish if they run at the same time.
  std::vector<FakeContext> ctx(3);
  std::vector<Call> calls(3);
  testing::start_call(io_, tool("exec"),
                      {{"command", "while [ ! -e go ]; do sleep 0.05; done; echo first $$"}},
                      ctx[0], calls[0]);
  testing::start_call(io_, tool("exec"), {{"command", "echo second $$"}}, ctx[1], calls[1]);
  testing::start_call(io_, tool("exec"), {{"command", "echo third $$; touch go"}}, ctx[2],
                      calls[2]);
  ASSERT_TRUE(run_until(io_, [&] { return calls[0].done && calls[1].done && calls[2].done; }));
  for (const Call& c : calls) ASSERT_TRUE(c.result && !c.result->is_error);
  // Each jail has its own pid namespace: every command is pid 2 under its init.
  EXPECT_EQ(testing::stream_text(*calls[0].result, "stdout"), "first 2\n");
  EXPECT_EQ(testing::stream_text(*calls[1].result, "stdout"), "second 2\n");
  EXPECT_EQ(testing::stream_text(*calls[2].result, "stdout"), "third 2\n");
}

TEST_F(ExecToolTest, ABackgroundProcessEndsWithTheCommand) {
  // The jail ends when its command does, taking what it left running (and
  // the pipes that process held) with it: the call does not wait for it.
  const std::string marker = fmt::format("brig-exec-background-{}", ::getpid());
  ToolResult r = exec(
      {{"command", "sh -c 'sleep 300; : " + marker + "' & echo started"}, {"yield_after", 60}});
  EXPECT_FALSE(r.is_error) << text_of(r);
  EXPECT_EQ((*r.structured)["status"], "exited");
  EXPECT_EQ(testing::stream_text(r, "stdout"), "started\n");
  EXPECT_TRUE(run_until(io_, [&] { return testing::processes_with(marker).empty(); }));
}

TEST_F(ExecToolTest, ArgvRunsWithoutAShell) {
  ToolResult r = exec({{"argv", {"/bin/echo", "$HOME", "a  b"}}});
  EXPECT_FALSE(r.is_error) << text_of(r);
  EXPECT_EQ(testing::stream_text(r, "stdout"), "$HOME a  b\n");
}

TEST_F(ExecToolTest, NonZeroExitIsAnErrorWithItsOutput) {
  ToolResult r = exec({{"command", "echo partial; echo why it failed >&2; exit 3"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ((*r.structured)["exit_code"], 3);
  EXPECT_EQ(testing::stream_text(r, "stderr"), "why it failed\n");
  EXPECT_THAT(text_of(r), HasSubstr("exit code 3"));
  EXPECT_THAT(text_of(r), HasSubstr("why it failed"));
}

TEST_F(ExecToolTest, AMissingProgramCannotStart) {
  ToolResult r = exec({{"argv", {"brig-no-such-program"}}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ((*r.structured)["status"], "failed_to_start");
  EXPECT_EQ((*r.structured)["exit_code"], 127);
  EXPECT_THAT(text_of(r), HasSubstr("brig-no-such-program"));
}

TEST_F(ExecToolTest, AFloodIsCutToHeadAndTailAndTheReplyStaysSmall) {
  constexpr std::uint64_t kFlood = 50ull << 20;
  FakeContext ctx;
  ToolResult r = call("exec",
                      {{"command", fmt::format("echo BEGIN; head -c {} /dev/zero | tr '\\0' x; "
                                               "echo; echo END",
                                               kFlood)},
                       {"max_output", 4096}},
                      ctx);
  ASSERT_FALSE(r.is_error) << protocol::clip(text_of(r), 2000);
  const Json& s = *r.structured;
  const std::uint64_t total = kFlood + 6 + 1 + 4;
  EXPECT_EQ(s["stdout_bytes"], total);
  EXPECT_EQ(s["stdout_dropped"], total - 4096);
  const std::string out = testing::stream_text(r, "stdout");
  EXPECT_TRUE(out.starts_with("BEGIN\nxxx")) << out.substr(0, 50);
  EXPECT_TRUE(out.ends_with("xxx\nEND\n"));
  EXPECT_THAT(out, HasSubstr(fmt::format("{} bytes left out here", total - 4096)));
  EXPECT_LT(protocol::encode(r.to_json()).size(), 64u * 1024);
  // Streaming stopped at its budget, and said so once.
  const std::size_t streamed = std::accumulate(
      ctx.progress_.begin(), ctx.progress_.end(), std::size_t{0},
      [](std::size_t n, const FakeContext::Progress& p) { return n + p.message.size(); });
  EXPECT_LE(streamed, 256u * 1024 + 1024);
  ASSERT_FALSE(ctx.progress_.empty());
  EXPECT_THAT(ctx.progress_.back().message, HasSubstr("streaming stopped"));
  // The cut output stays readable: the job is kept for it.
  ASSERT_TRUE(s.contains("job"));
  ToolResult page =
      call("job", {{"action", "read"}, {"id", s["job"]}, {"offset", 1 << 20}, {"limit", 10}});
  ASSERT_FALSE(page.is_error) << text_of(page);
  EXPECT_EQ(testing::first_text(page), "xxxxxxxxxx");
  EXPECT_FALSE(page.structured->contains("data"));  // the bytes travel once
  EXPECT_EQ((*page.structured)["next_offset"], (1 << 20) + 10);
  EXPECT_EQ((*page.structured)["eof"], false);
}

TEST_F(ExecToolTest, TheLargestReplyStaysUnderTheClientsLimit) {
  // Control bytes are what JSON escaping makes longest (\u0001, 6 bytes each).
  const std::string fill = fmt::format("head -c {} /dev/zero | tr '\\0' '\\1'", kMaxMaxOutput * 2);
  ToolResult r = exec({{"command", fill + "; " + fill + " >&2"}, {"max_output", kMaxMaxOutput}});
  ASSERT_FALSE(r.is_error) << protocol::clip(text_of(r), 2000);
  EXPECT_EQ((*r.structured)["stdout_dropped"], kMaxMaxOutput);
  EXPECT_EQ((*r.structured)["stderr_dropped"], kMaxMaxOutput);
  EXPECT_LT(protocol::encode(r.to_json()).size(), 10u << 20);
}

// Issue 16: a reply carries the output once, in the text block;
// structuredContent has the counts.
TEST_F(ExecToolTest, TheOutputTravelsOnce) {
  constexpr std::size_t kOut = 200 * 1024;
  ToolResult r = exec({{"command", fmt::format("head -c {} /dev/zero | tr '\\0' x", kOut)},
                       {"max_output", kMaxMaxOutput}});
  ASSERT_FALSE(r.is_error) << protocol::clip(text_of(r), 2000);
  EXPECT_EQ((*r.structured)["stdout_bytes"], kOut);
  EXPECT_EQ((*r.structured)["stdout_dropped"], 0);
  EXPECT_EQ(testing::stream_text(r, "stdout"), std::string(kOut, 'x') + "\n");
  EXPECT_LE(protocol::encode(r.to_json()).size(), kOut * 11 / 10);
}

TEST_F(ExecToolTest, InvalidUtf8BecomesValidJson) {
  ToolResult r = exec({{"command", "printf 'ok \\377\\376 \\303'; printf '\\351t\\351' >&2"}});
  ASSERT_FALSE(r.is_error) << text_of(r);
  // nlohmann's dump throws on invalid UTF-8: the repaired strings must not.
  std::string wire;
  ASSERT_NO_THROW(wire = r.to_json().dump());
  EXPECT_EQ(testing::stream_text(r, "stdout"), "ok \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\n");
  EXPECT_EQ(testing::stream_text(r, "stderr"), "\xEF\xBF\xBDt\xEF\xBF\xBD\n");
  EXPECT_TRUE(Json::accept(wire));
}

TEST_F(ExecToolTest, ATimeoutKillsTheJailAndSaysSo) {
  ToolResult r = exec({{"command", "echo started; exec sleep 120"}, {"timeout", 1}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ((*r.structured)["timed_out"], true);
  EXPECT_EQ((*r.structured)["status"], "timed_out");
  EXPECT_EQ(testing::stream_text(r, "stdout"), "started\n");
  EXPECT_THAT(text_of(r), HasSubstr("timed out"));
  EXPECT_LT((*r.structured)["duration_ms"].get<std::int64_t>(), 60'000);
}

TEST_F(ExecToolTest, CancellingTheCallLeavesNoProcess) {
  const std::string marker = fmt::format("brig-exec-cancel-{}", ::getpid());
  FakeContext ctx;
  Call c;
  testing::start_call(io_, tool("exec"), {{"command", "echo ready; sleep 300; : " + marker}}, ctx,
                      c);
  std::shared_ptr<Job> job;
  ASSERT_TRUE(run_until(io_, [&] {
    job = only_job();
    return job && job->spool(Stream::out).size() > 0;
  }));
  const pid_t init = job->pid();
  EXPECT_FALSE(testing::processes_with(marker).empty());
  testing::cancel_call(ctx, c);
  ASSERT_TRUE(run_until(io_, [&] { return c.done; }));
  ASSERT_TRUE(c.error);  // a cancelled handler ends with operation_aborted
  EXPECT_TRUE(run_until(io_, [&] { return testing::process_gone(init); }))
      << "the jail's init " << init << " is still running";
  EXPECT_TRUE(run_until(io_, [&] { return testing::processes_with(marker).empty(); }));
  EXPECT_TRUE(jobs_.list(::geteuid()).empty());  // the job tool cannot see it
  EXPECT_TRUE(run_until(io_, [&] { return job->finished(); }));
  EXPECT_TRUE(job->kill_requested());
  EXPECT_TRUE(job->abandoned());
  jobs_.list(::geteuid());  // a sweep: an abandoned job goes once it ended
  EXPECT_EQ(jobs_.size(), 0u);
}

// Issue 15: job's read, wait and kill answer with output, so, like exec,
// they make their reply only once the connection's output has room; a
// client that reads none of its answers cannot pile them up. A kill still
// kills at once: only its report waits.
TEST_F(ExecToolTest, JobRepliesWaitForRoomInTheOutput) {
  ToolResult r = exec({{"command", "echo out; sleep 60"}, {"yield_after", 0.2}});
  ASSERT_FALSE(r.is_error) << text_of(r);
  ASSERT_TRUE(r.structured->contains("job"));
  const std::string id = (*r.structured)["job"];

  FakeContext full;
  full.output_backlogged_ = true;
  Call read, wait, kill;
  testing::start_call(io_, tool("job"), {{"action", "read"}, {"id", id}}, full, read);
  testing::start_call(io_, tool("job"), {{"action", "wait"}, {"id", id}, {"seconds", 0.1}}, full,
                      wait);
  EXPECT_FALSE(run_until(
      io_, [&] { return read.done || wait.done; }, std::chrono::milliseconds(500)));

  testing::start_call(io_, tool("job"), {{"action", "kill"}, {"id", id}}, full, kill);
  std::shared_ptr<Job> job = only_job();
  ASSERT_TRUE(job);
  EXPECT_TRUE(run_until(io_, [&] { return job->finished(); })) << "kill waited for room";
  EXPECT_FALSE(kill.done);

  full.output_backlogged_ = false;
  ASSERT_TRUE(run_until(io_, [&] { return read.done && wait.done && kill.done; }));
  ASSERT_TRUE(read.result && wait.result && kill.result);
  EXPECT_EQ(testing::first_text(*read.result), "out\n");
  EXPECT_EQ((*kill.result->structured)["status"], "signaled") << kill.result->structured->dump();
}

TEST_F(ExecToolTest, ALongCommandYieldsAJobToWaitForAndRead) {
  const std::string go = ws_.file("go");
  ToolResult r = exec({{"command",
                        "echo first; while [ ! -e go ]; do sleep 0.05; done; "
                        "echo second; exit 5"},
                       {"yield_after", 0.2}});
  ASSERT_FALSE(r.is_error) << text_of(r);
  const Json& s = *r.structured;
  EXPECT_EQ(s["status"], "running");
  ASSERT_TRUE(s.contains("job"));
  const std::string id = s["job"];
  EXPECT_THAT(text_of(r), HasSubstr("still running"));
  std::string seen = testing::stream_text(r, "stdout");

  ToolResult listed = call("job", {{"action", "list"}});
  ASSERT_EQ((*listed.structured)["jobs"].size(), 1u);
  EXPECT_EQ((*listed.structured)["jobs"][0]["id"], id);
  EXPECT_EQ((*listed.structured)["jobs"][0]["status"], "running");

  std::ofstream(go) << "";
  ToolResult waited = call("job", {{"action", "wait"}, {"id", id}, {"seconds", 60}});
  EXPECT_TRUE(waited.is_error);  // exit 5
  EXPECT_EQ((*waited.structured)["exit_code"], 5);
  seen += testing::stream_text(waited, "stdout");
  EXPECT_EQ(seen, "first\nsecond\n");  // each byte shown once across the two results

  ToolResult page = call("job", {{"action", "read"}, {"id", id}, {"offset", 6}, {"limit", 3}});
  EXPECT_EQ(testing::first_text(page), "sec");
  EXPECT_EQ((*page.structured)["next_offset"], 9);
  ToolResult rest = call("job", {{"action", "read"}, {"id", id}, {"offset", 9}});
  EXPECT_EQ(testing::first_text(rest), "ond\n");
  EXPECT_EQ((*rest.structured)["eof"], true);
}

TEST_F(ExecToolTest, JobKillEndsTheWholeJail) {
  ToolResult r = exec({{"command", "exec sleep 300"}, {"yield_after", 0}});
  ASSERT_EQ((*r.structured)["status"], "running") << text_of(r);
  const std::string id = (*r.structured)["job"];
  const pid_t init = only_job()->pid();
  ToolResult killed = call("job", {{"action", "kill"}, {"id", id}});
  EXPECT_TRUE(killed.is_error);
  EXPECT_EQ((*killed.structured)["status"], "signaled");
  EXPECT_EQ((*killed.structured)["signal"], "SIGKILL");
  EXPECT_THAT(text_of(killed), HasSubstr("on request"));
  EXPECT_TRUE(run_until(io_, [&] { return testing::process_gone(init); }));
  ToolResult again = call("job", {{"action", "signal"}, {"id", id}, {"signal", "TERM"}});
  EXPECT_TRUE(again.is_error);
  EXPECT_THAT(text_of(again), HasSubstr("already finished"));
}

TEST_F(ExecToolTest, JobSignalReachesTheCommand) {
  ToolResult r = exec({{"command",
                        "trap 'echo got TERM; exit 7' TERM; echo ready; "
                        "while :; do sleep 0.05; done"},
                       {"yield_after", 0}});
  const std::string id = (*r.structured)["job"];
  std::shared_ptr<Job> job = only_job();
  ASSERT_TRUE(run_until(io_, [&] { return job->spool(Stream::out).size() >= 6; }));
  ToolResult sent = call("job", {{"action", "signal"}, {"id", id}, {"signal", "sigterm"}});
  EXPECT_FALSE(sent.is_error) << text_of(sent);
  ToolResult waited = call("job", {{"action", "wait"}, {"id", id}, {"seconds", 60}});
  EXPECT_EQ((*waited.structured)["exit_code"], 7) << text_of(waited);
  EXPECT_THAT(testing::stream_text(waited, "stdout"), HasSubstr("got TERM"));
}

TEST_F(ExecToolTest, AnotherUsersJobsAreInvisible) {
  ToolResult r = exec({{"command", "exec sleep 300"}, {"yield_after", 0}});
  const std::string id = (*r.structured)["job"];
  FakeContext stranger(process::PeerCredentials{.pid = 1, .uid = ::geteuid() + 4242, .gid = 0});
  ToolResult listed = call("job", {{"action", "list"}}, stranger);
  EXPECT_TRUE((*listed.structured)["jobs"].empty());
  for (const char* action : {"read", "wait", "kill", "signal", "write"}) {
    ToolResult denied = call("job", {{"action", action}, {"id", id}, {"signal", "KILL"}}, stranger);
    EXPECT_TRUE(denied.is_error) << action;
    EXPECT_THAT(text_of(denied), HasSubstr("no job")) << action;
  }
  EXPECT_FALSE(only_job()->finished());
  FakeContext owner(process::PeerCredentials{.pid = 1, .uid = ::geteuid(), .gid = 0});
  EXPECT_EQ((*call("job", {{"action", "list"}}, owner).structured)["jobs"].size(), 1u);
}

TEST_F(ExecToolTest, EnvironmentIsTheAllowlistPlusTheCallsEnv) {
  ToolResult r = exec({{"argv", {"env"}}, {"env", {{"ADDED_BY_CALL", "yes"}}}});
  ASSERT_FALSE(r.is_error) << text_of(r);
  const std::string out = testing::stream_text(r, "stdout");
  EXPECT_THAT(out, Not(HasSubstr(kHostOnly)));
  EXPECT_THAT(out, HasSubstr("ADDED_BY_CALL=yes\n"));
  EXPECT_THAT(out, HasSubstr("GIT_EDITOR=true\n"));
  EXPECT_THAT(out, HasSubstr("PAGER=cat\n"));
  EXPECT_THAT(out, HasSubstr("TERM=dumb\n"));
  EXPECT_THAT(out, HasSubstr("PATH="));
}

TEST_F(ExecToolTest, StdinIsEmptyUnlessGiven) {
  ToolResult none = exec({{"command", "cat; echo done"}});
  EXPECT_EQ(testing::stream_text(none, "stdout"), "done\n");
  ToolResult given = exec({{"argv", {"cat"}}, {"stdin", "fed in\n"}});
  EXPECT_EQ(testing::stream_text(given, "stdout"), "fed in\n");
  ToolResult tty = exec({{"command", "[ -t 0 ] || echo no tty"}});
  EXPECT_EQ(testing::stream_text(tty, "stdout"), "no tty\n");
}

TEST_F(ExecToolTest, OpenStdinTakesJobWrites) {
  ToolResult r = exec({{"command", "read a; read b; echo \"got $a $b\"; cat"},
                       {"stdin", "one\n"},
                       {"stdin_open", true},
                       {"yield_after", 0}});
  ASSERT_EQ((*r.structured)["status"], "running") << text_of(r);
  const std::string id = (*r.structured)["job"];
  ToolResult w =
      call("job", {{"action", "write"}, {"id", id}, {"input", "two\nrest"}, {"eof", true}});
  EXPECT_FALSE(w.is_error) << text_of(w);
  ToolResult waited = call("job", {{"action", "wait"}, {"id", id}, {"seconds", 60}});
  EXPECT_EQ((*waited.structured)["exit_code"], 0) << text_of(waited);
  EXPECT_EQ(testing::stream_text(waited, "stdout"), "got one two\nrest\n");
  ToolResult closed = call("job", {{"action", "write"}, {"id", id}, {"input", "more"}});
  EXPECT_TRUE(closed.is_error);
  EXPECT_THAT(text_of(closed), HasSubstr("has finished"));
}

TEST_F(ExecToolTest, CwdIsInTheWorkspaceOrRefused) {
  ASSERT_EQ(::mkdir(ws_.file("sub").c_str(), 0755), 0);
  ToolResult r = exec({{"command", "pwd"}, {"cwd", "sub"}});
  EXPECT_EQ(testing::stream_text(r, "stdout"), ws_.file("sub") + "\n");
  ToolResult tmp = exec({{"command", "pwd"}, {"cwd", "/tmp"}});
  EXPECT_EQ(testing::stream_text(tmp, "stdout"), "/tmp\n");
  ToolResult missing = exec({{"command", "pwd"}, {"cwd", "no-such-dir"}});
  EXPECT_TRUE(missing.is_error);
  EXPECT_EQ((*missing.structured)["status"], "failed_to_start") << text_of(missing);
  EXPECT_THAT(text_of(missing), HasSubstr("no-such-dir"));
  ToolResult outside = exec({{"command", "pwd"}, {"cwd", "/srv/brig-nowhere"}});
  EXPECT_TRUE(outside.is_error);
  EXPECT_THAT(text_of(outside), HasSubstr("does not contain it"));
  EXPECT_EQ(jobs_.size(), 0u);
}

TEST_F(ExecToolTest, ArgumentMistakesAreToolErrors) {
  EXPECT_THAT(text_of(exec({{"command", "true"}, {"argv", {"true"}}})),
              HasSubstr("exactly one of command"));
  EXPECT_TRUE(call("job", {{"action", "read"}}).is_error);
  EXPECT_THAT(text_of(call("job", {{"action", "read"}, {"id", "job-999"}})), HasSubstr("no job"));
}

TEST_F(ExecToolTest, ProgressStreamsTheOutputInOrder) {
  FakeContext ctx;
  ToolResult r =
      call("exec", {{"command", "seq 1 20000; echo done >&2"}, {"max_output", kMaxMaxOutput}}, ctx);
  ASSERT_FALSE(r.is_error) << text_of(r);
  std::string streamed;
  double last = 0;
  for (const auto& p : ctx.progress_) {
    EXPECT_GT(p.progress, last);
    last = p.progress;
    streamed += p.message;
  }
  // Every byte once, each stream in order (stdout and stderr each keep theirs).
  std::string expected;
  for (int i = 1; i <= 20000; ++i) expected += fmt::format("{}\n", i);
  ASSERT_EQ(testing::stream_text(r, "stdout"), expected);
  std::string out_part = streamed;
  const std::size_t err_at = out_part.find("done\n");
  ASSERT_NE(err_at, std::string::npos);
  out_part.erase(err_at, 5);
  EXPECT_EQ(out_part, expected);
  // Coalesced: 20000 lines (109 KB) come in batches, not a line at a time.
  EXPECT_LT(ctx.progress_.size(), 2000u);
  EXPECT_GT(ctx.progress_.size(), 1u);
}

TEST_F(ExecToolTest, ProgressArrivesWhileTheCommandRuns) {
  FakeContext ctx;
  Call c;
  const std::string go = ws_.file("go");
  testing::start_call(
      io_, tool("exec"),
      {{"command", "echo early; while [ ! -e go ]; do sleep 0.05; done; echo late"}}, ctx, c);
  // The first line comes as progress before the command can end.
  ASSERT_TRUE(run_until(io_, [&] { return !ctx.progress_.empty(); }));
  EXPECT_EQ(ctx.progress_.front().message, "early\n");
  EXPECT_FALSE(c.done);
  std::ofstream(go) << "";
  ASSERT_TRUE(run_until(io_, [&] { return c.done; }));
  EXPECT_EQ(ctx.progress_.back().message, "late\n");
}

class ExecCapacityTest : public ExecToolTest {
 protected:
  ExecCapacityTest() : ExecToolTest(small()) {}
  static JobLimits small() {
    JobLimits limits;
    limits.max_jobs_per_owner = 3;
    limits.max_exec_calls_per_connection = 2;
    return limits;
  }
  // Starts n exec calls at once on `connection`, as a pipelining client's
  // burst reaches them: each is admitted (or not) before any jail spawns.
  std::vector<ToolResult> burst(int n, std::uint64_t connection, const Json& args) {
    std::vector<FakeContext> ctx(n);
    std::vector<Call> calls(n);
    for (int i = 0; i < n; ++i) {
      ctx[i].connection_ = connection;
      testing::start_call(io_, tool("exec"), args, ctx[i], calls[i]);
    }
    EXPECT_TRUE(run_until(io_, [&] {
      return std::all_of(calls.begin(), calls.end(), [](const Call& c) { return c.done; });
    }));
    std::vector<ToolResult> out;
    for (Call& c : calls) out.push_back(c.result.value_or(ToolResult::error("no result")));
    return out;
  }
  static bool is_job(const ToolResult& r) {
    return !r.is_error && r.structured && (*r.structured)["status"] == "running";
  }
};

// Issue 15: a uid's running commands used to count against its job limit
// while their calls still followed them, so busy clients of one uid were
// refused `echo`. Only commands that outlived their call are its jobs.
TEST_F(ExecCapacityTest, AQuickCommandRunsWhateverJobsTheUserHas) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ToolResult r = exec({{"command", "exec sleep 300"}, {"yield_after", 0}});
    ASSERT_TRUE(is_job(r)) << text_of(r);
    ids.push_back((*r.structured)["job"]);
  }
  ToolResult echo = exec({{"command", "echo hi"}});
  ASSERT_FALSE(echo.is_error) << text_of(echo);
  EXPECT_THAT(text_of(echo), HasSubstr("--- stdout ---\nhi\n"));
  // One more job is one too many: the command is killed, the call says why.
  ToolResult over = exec({{"command", "exec sleep 300"}, {"yield_after", 0}});
  EXPECT_TRUE(over.is_error);
  EXPECT_THAT(text_of(over), HasSubstr("3 jobs of this user"));
  EXPECT_THAT(text_of(over), HasSubstr("--max-jobs 3"));
  EXPECT_EQ(jobs_.list(::geteuid()).size(), 3u);
  // Another uid has its own allowance.
  FakeContext other(process::PeerCredentials{.pid = 1, .uid = ::geteuid() + 4242, .gid = 0});
  EXPECT_TRUE(is_job(call("exec", {{"command", "exec sleep 300"}, {"yield_after", 0}}, other)));
  call("job", {{"action", "kill"}, {"id", ids.front()}});
  EXPECT_TRUE(is_job(exec({{"command", "exec sleep 300"}, {"yield_after", 0}})));
}

// Issue 15: 60 pipelined exec calls all became jobs against a limit of 16.
// Calls from several connections of one uid, started at once: exactly the
// limit become jobs, each connection's calls beyond its own limit are refused
// at once, and the rest are refused when they would have become jobs.
TEST_F(ExecCapacityTest, ABurstMakesExactlyTheLimitJobsAndRefusesTheRest) {
  const Json args = {{"command", "exec sleep 300"}, {"yield_after", 0}};
  constexpr int kConnections = 3, kPerConnection = 4;
  std::vector<FakeContext> ctx(kConnections * kPerConnection);
  std::vector<Call> calls(ctx.size());
  for (std::size_t i = 0; i < ctx.size(); ++i) {
    ctx[i].connection_ = 1 + i / kPerConnection;
    testing::start_call(io_, tool("exec"), args, ctx[i], calls[i]);
  }
  ASSERT_TRUE(run_until(io_, [&] {
    return std::all_of(calls.begin(), calls.end(), [](const Call& c) { return c.done; });
  }));
  std::vector<ToolResult> all;
  for (std::size_t i = 0; i < ctx.size(); ++i) {
    // Past the connection's two: refused at once.
    if (i % kPerConnection >= 2) {
      EXPECT_THAT(text_of(*calls[i].result), HasSubstr("--max-exec-calls 2"));
    }
  }
  for (std::size_t i = 0; i < ctx.size(); ++i) {
    if (i % kPerConnection < 2) all.push_back(*calls[i].result);
  }
  const auto jobs = std::count_if(all.begin(), all.end(), is_job);
  EXPECT_EQ(jobs, 3);
  for (const ToolResult& r : all) {
    if (!is_job(r)) {
      EXPECT_THAT(text_of(r), HasSubstr("--max-jobs 3"));
    }
  }
  EXPECT_EQ(jobs_.list(::geteuid()).size(), 3u);
  EXPECT_EQ(jobs_.running_jobs(::geteuid()), 3u);
}

// The connection's limit counts calls in flight, not jobs: once its calls
// have returned (their commands running on as jobs), it may call again.
TEST_F(ExecCapacityTest, AConnectionsCallsInFlightAreBoundedNotItsJobs) {
  const std::string go = ws_.file("go");
  const Json wait = {{"command", "while [ ! -e go ]; do sleep 0.05; done"}};
  std::vector<ToolResult> first = burst(3, 5, {{"command", "exec sleep 300"}, {"yield_after", 0}});
  EXPECT_EQ(std::count_if(first.begin(), first.end(), is_job), 2);
  std::vector<FakeContext> ctx(3);
  std::vector<Call> calls(3);
  for (int i = 0; i < 3; ++i) {
    ctx[i].connection_ = 5;
    testing::start_call(io_, tool("exec"), wait, ctx[i], calls[i]);
  }
  ASSERT_TRUE(run_until(io_, [&] { return calls[2].done; }));
  EXPECT_FALSE(calls[0].done || calls[1].done) << "they wait for go";
  EXPECT_THAT(text_of(*calls[2].result), HasSubstr("2 exec calls of this connection"));
  FakeContext elsewhere;
  elsewhere.connection_ = 6;
  EXPECT_FALSE(call("exec", {{"command", "true"}}, elsewhere).is_error);
  std::ofstream(go) << "";
  ASSERT_TRUE(run_until(io_, [&] { return calls[0].done && calls[1].done; }));
  EXPECT_FALSE(calls[0].result->is_error) << text_of(*calls[0].result);
  EXPECT_FALSE(calls[1].result->is_error) << text_of(*calls[1].result);
}

class ExecRetentionTest : public ExecToolTest {
 protected:
  ExecRetentionTest() : ExecToolTest(short_retention()) {}
  static JobLimits short_retention() {
    JobLimits limits;
    limits.retention = std::chrono::milliseconds(1);
    return limits;
  }
};

TEST_F(ExecRetentionTest, AFinishedJobIsDroppedAfterItsRetention) {
  ToolResult r = exec({{"command", "exec sleep 0.3"}, {"yield_after", 0}});
  const std::string id = (*r.structured)["job"];
  std::shared_ptr<Job> job = only_job();
  ASSERT_TRUE(run_until(io_, [&] { return job->finished(); }));
  EXPECT_TRUE(run_until(io_, [&] { return jobs_.list(::geteuid()).empty(); }));
  EXPECT_THAT(text_of(call("job", {{"action", "read"}, {"id", id}})), HasSubstr("no job"));
}

}  // namespace
}  // namespace brig::exec
