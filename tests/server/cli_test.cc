// The brig front end: its own commands, and forwarding to brig-server.
#include <sys/wait.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "tests/server/test_support.h"

namespace brig::server::testing {
namespace {

struct ProgramRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

ProgramRun run(const std::vector<std::string>& args) {
  Child child(args);
  ProgramRun r;
  r.out = child.read_stdout();
  r.err = child.read_stderr();
  const auto status = child.wait();
  if (status && WIFEXITED(*status)) r.exit_code = WEXITSTATUS(*status);
  return r;
}

TEST(BrigCli, VersionAndHelp) {
  const std::string brig = sibling_binary("brig");
  const ProgramRun version = run({brig, "--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("brig ", 0), 0u) << version.out;

  for (const auto& args :
       {std::vector<std::string>{brig, "help"}, std::vector<std::string>{brig, "--help"}}) {
    const ProgramRun help = run(args);
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("Usage: brig"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("serve"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("doctor"), std::string::npos) << help.out;
  }
}

TEST(BrigCli, ServeHelpComesFromBrigServerUnderBrigsName) {
  const std::string brig = sibling_binary("brig");
  for (const auto& args : {std::vector<std::string>{brig, "serve", "--help"},
                           std::vector<std::string>{brig, "help", "serve"}}) {
    const ProgramRun help = run(args);
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_NE(help.out.find("Usage: brig serve"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("--listen"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("--max-inflight"), std::string::npos) << help.out;
  }
}

TEST(BrigCli, UnknownCommandsAndOptionsExitTwo) {
  EXPECT_EQ(run({sibling_binary("brig"), "frobnicate"}).exit_code, 2);
  EXPECT_EQ(run({sibling_binary("brig"), "help", "frobnicate"}).exit_code, 2);
  EXPECT_EQ(run({sibling_binary("brig"), "serve", "--no-such-option"}).exit_code, 2);
  EXPECT_EQ(run({sibling_binary("brig-server")}).exit_code, 2);
  // Below 64 KiB the stand-in error for an oversized reply might not fit:
  // refused, not silently raised.
  EXPECT_EQ(run({sibling_binary("brig"), "serve", "--max-message-bytes", "2000"}).exit_code, 2);
}

TEST(BrigCli, BrigServeServesMcpThroughBrigServer) {
  TempDir ws;
  Child child({sibling_binary("brig"), "serve", "--workspace", ws.path()});
  LineClient client = child.take_client();
  ASSERT_TRUE(client.send(initialize_request(1)));
  auto init = client.read_response(1);
  ASSERT_TRUE(init);
  EXPECT_EQ(init->at("result").at("serverInfo").at("name"), "brig");
  ASSERT_TRUE(client.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}));
  auto list = client.read_response(2);
  ASSERT_TRUE(list);
  std::vector<std::string> names;
  for (const Json& t : list->at("result").at("tools")) names.push_back(t.at("name"));
  EXPECT_NE(std::find(names.begin(), names.end(), "read_file"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "echo"), names.end())
      << "test tools belong to brig-test-server only";
  client.close_write();
  const auto status = child.wait();
  ASSERT_TRUE(status && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

}  // namespace
}  // namespace brig::server::testing
