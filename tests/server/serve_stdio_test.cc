// brig-test-server as a child process speaking MCP on its stdin/stdout.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "tests/server/test_support.h"

namespace brig::server::testing {
namespace {

std::vector<std::string> serve_args(const TempDir& ws, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {sibling_binary("brig-test-server"), "serve", "--workspace",
                                   ws.path()};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(ServeStdio, StdoutCarriesOnlyJsonRpcAndLogsGoToStderr) {
  TempDir ws;
  Child child(serve_args(ws, {"--log-level", "trace"}));
  LineClient client = child.take_client();
  ASSERT_TRUE(initialize(client));
  ASSERT_TRUE(client.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}));
  auto list = client.read_response(2);
  ASSERT_TRUE(list);
  std::vector<std::string> names;
  for (const Json& t : list->at("result").at("tools")) names.push_back(t.at("name"));
  // The shipped tools first, then brig-test-server's test tools.
  const std::vector<std::string> test_tools = {"echo", "add", "slow", "progress", "fail"};
  ASSERT_GT(names.size(), test_tools.size());
  EXPECT_EQ(std::vector<std::string>(names.end() - test_tools.size(), names.end()), test_tools);
  for (auto it = names.begin(); it != names.end() - test_tools.size(); ++it)
    EXPECT_TRUE(std::set<std::string>({"exec", "job", "read_file", "write_file", "edit_file",
                                       "list_directory", "find_files", "search"})
                    .contains(*it))
        << *it;
  ASSERT_TRUE(client.send(tool_call(3, "echo", {{"text", "über ✓"}})));
  auto echo = client.read_response(3);
  ASSERT_TRUE(echo);
  EXPECT_EQ(echo->at("result").at("structuredContent").at("text"), "über ✓");
  client.close_write();
  // Every remaining stdout line must still be JSON, up to a clean EOF.
  while (client.read()) {
  }
  EXPECT_TRUE(client.eof());
  EXPECT_EQ(client.bad_line(), "");
  EXPECT_TRUE(exited_zero(child.wait()));
  const std::string log = child.read_stderr();
  EXPECT_NE(log.find("serving workspace " + ws.path()), std::string::npos) << log;
  EXPECT_NE(log.find("<- "), std::string::npos) << "trace logs the traffic on stderr";
}

TEST(ServeStdio, EndOfInputCancelsCallsInFlightAndExitsZero) {
  TempDir ws;
  Child child(serve_args(ws));
  LineClient client = child.take_client();
  ASSERT_TRUE(initialize(client));
  // A call that would outlast the test's deadline unless it is cancelled.
  ASSERT_TRUE(client.send(tool_call(1, "slow", {{"seconds", 120}})));
  ASSERT_TRUE(client.send(tool_call(2, "echo", {{"text", "sync"}})));
  ASSERT_TRUE(client.read_response(2));
  client.close_write();
  EXPECT_TRUE(exited_zero(child.wait()));
}

TEST(ServeStdio, SigtermAndSigintCancelCallsInFlightAndExitZero) {
  for (int sig : {SIGTERM, SIGINT}) {
    TempDir ws;
    Child child(serve_args(ws));
    LineClient client = child.take_client();
    ASSERT_TRUE(initialize(client));
    ASSERT_TRUE(client.send(tool_call(1, "slow", {{"seconds", 120}})));
    ASSERT_TRUE(client.send(tool_call(2, "echo", {{"text", "sync"}})));
    ASSERT_TRUE(client.read_response(2));
    child.signal(sig);
    EXPECT_TRUE(exited_zero(child.wait())) << strsignal(sig);
  }
}

TEST(ServeStdio, AClientThatStopsReadingDoesNotKillBrigWithSigpipe) {
  TempDir ws;
  Child child(serve_args(ws));
  LineClient client = child.take_client();
  ASSERT_TRUE(initialize(client));
  const std::string marker = ws.file("slow-done");
  ASSERT_TRUE(client.send(tool_call(1, "slow", {{"seconds", 3}, {"marker", marker}})));
  // The client departs while the reply is pending: brig's write of it then
  // fails with EPIPE, and raises SIGPIPE unless brig ignores it.
  client.close_read();
  ASSERT_FALSE(std::filesystem::exists(marker)) << "the reply was written before the close";
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(marker); }));
  // A broken output ends the session: brig exits by itself, with status 0 as
  // at the end of input, and is not killed by the signal.
  const auto status = child.wait();
  ASSERT_TRUE(status) << "brig did not exit after its output broke";
  EXPECT_FALSE(WIFSIGNALED(*status)) << "killed by " << strsignal(WTERMSIG(*status));
  EXPECT_TRUE(exited_zero(status)) << child.read_stderr();
}

TEST(ServeStdio, StartsWithClosedStandardDescriptors) {
  TempDir ws;
  {
    // No stdin at all: it reads as /dev/null, so the session ends at once.
    Child child(serve_args(ws),
                Child::Options{.close_stdin = true, .close_stderr = true, .cwd = ""});
    EXPECT_TRUE(exited_zero(child.wait()));
    EXPECT_EQ(child.read_stdout(), "");
  }
  {
    // No stderr: logging must not land in the JSON stream.
    Child child(serve_args(ws, {"--log-level", "trace"}),
                Child::Options{.close_stdin = false, .close_stderr = true, .cwd = ""});
    LineClient client = child.take_client();
    ASSERT_TRUE(initialize(client));
    client.close_write();
    while (client.read()) {
    }
    EXPECT_EQ(client.bad_line(), "");
    EXPECT_TRUE(exited_zero(child.wait()));
  }
}

TEST(ServeStdio, AnOversizedLineIsAnsweredAndSkipped) {
  TempDir ws;
  Child child(serve_args(ws, {"--max-line-bytes", "1000"}));
  LineClient client = child.take_client();
  ASSERT_TRUE(initialize(client));
  ASSERT_TRUE(client.send_raw(std::string(5000, 'x') + "\n"));
  auto error = client.read();
  ASSERT_TRUE(error);
  EXPECT_EQ(error->at("error").at("code"), -32600);
  ASSERT_TRUE(client.send({{"jsonrpc", "2.0"}, {"id", 9}, {"method", "ping"}}));
  EXPECT_TRUE(client.read_response(9));
}

TEST(ServeStdio, MaxInflightLimitsCallsPerConnection) {
  TempDir ws;
  Child child(serve_args(ws, {"--max-inflight", "1"}));
  LineClient client = child.take_client();
  ASSERT_TRUE(initialize(client));
  ASSERT_TRUE(client.send(tool_call(1, "slow", {{"seconds", 0.5}})));
  ASSERT_TRUE(client.send(tool_call(2, "slow", {{"seconds", 0.5}})));
  auto refused = client.read();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->at("id"), 2);
  EXPECT_EQ(refused->at("error").at("code"), -32603);
  EXPECT_TRUE(client.read_response(1));
}

TEST(ServeStdio, AnImplicitWorkspaceInRootIsRefused) {
  Child child({sibling_binary("brig-test-server"), "serve"},
              Child::Options{.close_stdin = false, .close_stderr = false, .cwd = "/"});
  const auto status = child.wait();
  ASSERT_TRUE(status && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  const std::string err = child.read_stderr();
  EXPECT_NE(err.find("--workspace"), std::string::npos) << err;
}

// --state-dir places the write journal (a service may have no HOME); one
// where a jail can write is not used, and the log says why.
TEST(ServeStdio, StateDirHoldsTheWriteJournalUnlessAJailCanWriteThere) {
  TempDir ws;
  TempDir state;
  for (const std::string& dir : {state.file("brig"), ws.file("state")}) {
    Child child(serve_args(ws, {"--state-dir", dir}));
    LineClient client = child.take_client();
    ASSERT_TRUE(initialize(client));
    ASSERT_TRUE(client.send(tool_call(2, "write_file", {{"path", "a.txt"}, {"content", "a"}})));
    auto wrote = client.read_response(2);
    ASSERT_TRUE(wrote);
    EXPECT_FALSE(wrote->at("result").value("isError", true)) << wrote->dump();
    client.close_write();
    EXPECT_TRUE(exited_zero(child.wait()));
    const std::string log = child.read_stderr();
    const bool jail_writable = dir.starts_with(ws.path());
    EXPECT_EQ(std::filesystem::is_directory(dir + "/writes"), !jail_writable) << log;
    EXPECT_EQ(log.find("no write journal at " + dir + "/writes") != std::string::npos,
              jail_writable)
        << log;
  }
}

TEST(ServeStdio, CommandLineErrorsExitTwo) {
  Child child({sibling_binary("brig-test-server"), "serve", "--max-inflight", "zero"});
  const auto status = child.wait();
  ASSERT_TRUE(status && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
}

}  // namespace
}  // namespace brig::server::testing
