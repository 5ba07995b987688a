// `brig run` and `brig policy` end to end: the real brig binary, real jails.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/test_support.h"

namespace brig::server {
namespace {

using testing::Child;
using ::testing::HasSubstr;
using testing::TempDir;

struct Ran {
  int status = -1;  // the exit status, or -1 if brig did not exit normally in time
  std::string out, err;
};

// Runs brig with `args` in `cwd`, with `env` ("NAME=value") added to the
// test's own environment.
Ran brig(const std::vector<std::string>& args, const std::string& cwd,
         const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(testing::sibling_binary("brig"));
  argv.insert(argv.end(), args.begin(), args.end());
  Child child(argv, Child::Options{.close_stdin = false, .close_stderr = false, .cwd = cwd});
  Ran r;
  r.out = child.read_stdout();
  r.err = child.read_stderr();
  auto status = child.wait();
  if (status && WIFEXITED(*status)) r.status = WEXITSTATUS(*status);
  return r;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

class BrigRun : public ::testing::Test {
 protected:
  Ran run(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
    args.insert(args.begin(), "run");
    return brig(args, ws.path(), env);
  }
  TempDir ws;
};

TEST_F(BrigRun, ExitsWithTheCommandsStatus) {
  EXPECT_EQ(run({"--", "/bin/true"}).status, 0);
  EXPECT_EQ(run({"sh", "-c", "exit 3"}).status, 3);  // no "--" needed: -c is the command's
  EXPECT_EQ(run({"sh", "-c", "kill -TERM $$"}).status, 128 + SIGTERM);
}

TEST_F(BrigRun, MissingAndUnrunnableCommands) {
  Ran missing = run({"--", "brig-no-such-command"});
  EXPECT_EQ(missing.status, 127);
  EXPECT_THAT(missing.err, HasSubstr("brig-no-such-command"));
  std::ofstream(ws.file("script")) << "#!/bin/sh\nexit 0\n";  // not executable
  EXPECT_EQ(run({"--", ws.file("script")}).status, 126);
}

TEST_F(BrigRun, PassesStdoutThrough) {
  Ran r = run({"--", "sh", "-c", "echo out; echo err >&2"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST_F(BrigRun, DefaultWritesTheWorkspaceStrictCannot) {
  // The positive control first: the same write works under default.
  EXPECT_EQ(run({"--", "sh", "-c", "echo x > " + ws.file("made")}).status, 0);
  EXPECT_TRUE(exists(ws.file("made")));
  Ran strict = run({"--policy", "strict", "--", "sh", "-c", "echo x > " + ws.file("strict")});
  EXPECT_NE(strict.status, 0);
  EXPECT_THAT(strict.err, HasSubstr("Read-only file system"));
  EXPECT_FALSE(exists(ws.file("strict")));
}

TEST_F(BrigRun, OnlyTheAllowlistedEnvironmentGetsIn) {
  Ran r = run({"--", "sh", "-c", "echo \"[$BRIG_TEST_SECRET][$TERM][$HOME]\""},
              {"BRIG_TEST_SECRET=hunter2", "TERM=brig-term"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, ::testing::MatchesRegex("\\[\\]\\[brig-term\\]\\[/.+\\]\n"));
}

TEST_F(BrigRun, TimeoutKillsTheJail) {
  Ran r = run({"--timeout", "1s", "--", "sleep", "60"});
  EXPECT_EQ(r.status, 124);
  EXPECT_THAT(r.err, HasSubstr("timed out after 1s"));
}

TEST_F(BrigRun, RefusesARootWorkspace) {
  Ran implicit = brig({"run", "--", "/bin/true"}, "/");
  EXPECT_EQ(implicit.status, 125);
  EXPECT_THAT(implicit.err, HasSubstr("Pass --workspace /absolute/path/to/project"));
  Ran explicit_root = run({"--workspace", "/", "--", "/bin/true"});
  EXPECT_EQ(explicit_root.status, 125);
  EXPECT_THAT(explicit_root.err, HasSubstr("name a project directory"));
}

TEST_F(BrigRun, BadPolicyIsABrigFailure) {
  std::ofstream(ws.file("bad.toml")) << "[network]\nmode = \"nonee\"\n";
  Ran r = run({"--policy", ws.file("bad.toml"), "--", "/bin/true"});
  EXPECT_EQ(r.status, 125);
  EXPECT_THAT(r.err, HasSubstr(ws.file("bad.toml") + ":2:8: network.mode = \"nonee\" is not "
                                                     "allowed; did you mean \"none\"?"));
  EXPECT_EQ(run({"--timeout", "soon", "--", "/bin/true"}).status, 125);
  EXPECT_EQ(brig({"run"}, ws.path()).status, 2);
}

TEST(BrigPolicy, CheckReportsEveryErrorWithItsPosition) {
  TempDir dir;
  std::ofstream(dir.file("p.toml")) << "extends = \"default\"\n[filesystem]\nread_onyl = []\n"
                                       "[limits]\nmemory = \"2GB\"\n";
  Ran r = brig({"policy", "check", dir.file("p.toml")}, dir.path());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err,
            dir.file("p.toml") +
                ":3:1: error: unknown key \"read_onyl\" in [filesystem]; "
                "did you mean \"read_only\"?\n" +
                dir.file("p.toml") +
                ":5:10: error: limits.memory: \"2GB\" is ambiguous "
                "(decimal or binary?); write \"2GiB\" for binary units, or \"unlimited\" for "
                "no limit\nbrig policy: " +
                dir.file("p.toml") + " is not valid (2 errors)\n");
  EXPECT_EQ(r.out, "");
}

TEST(BrigPolicy, CheckSummarizesAValidPolicy) {
  TempDir dir;
  Ran r = brig({"policy", "check", "dev"}, dir.path());
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, ::testing::StartsWith("ok: <built-in>/dev.toml\n  extends    "
                                           "<built-in>/default.toml\n"));
}

TEST(BrigPolicy, ShowPrintsAPolicyThatChecks) {
  TempDir dir;
  Ran shown = brig({"policy", "show", "strict"}, dir.path());
  ASSERT_EQ(shown.status, 0);
  EXPECT_THAT(shown.out, HasSubstr("\n[filesystem]\nworkspace = \"read_only\"\n"));
  std::ofstream(dir.file("shown.toml")) << shown.out;
  Ran checked = brig({"policy", "check", dir.file("shown.toml")}, dir.path());
  EXPECT_EQ(checked.status, 0) << checked.err;
}

}  // namespace
}  // namespace brig::server
