// `brig run` and `brig policy` end to end: the real brig binary, real jails.
#include <signal.h>
#include <sys/prctl.h>
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
using ::testing::Not;
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

TEST_F(BrigRun, PassesStdinThrough) {
  Child child({testing::sibling_binary("brig"), "run", "--", "cat"},
              Child::Options{.close_stdin = false, .close_stderr = false, .cwd = ws.path()});
  ASSERT_TRUE(child.write_stdin_and_close("hi\nsecond line \xc3\xbc\n"));
  EXPECT_EQ(child.read_stdout(), "hi\nsecond line \xc3\xbc\n");
  EXPECT_EQ(child.read_stderr(), "");
  const auto status = child.wait();
  ASSERT_TRUE(status && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

// The processes whose command line holds `tag`, other than brig's own (the
// brig run process and the jail's init, a clone of it, carry the command's
// argv too).
std::vector<pid_t> jailed_with(const std::string& tag, const std::string& brig_path) {
  std::vector<pid_t> out;
  for (pid_t p : testing::pids_with_cmdline(tag)) {
    std::ifstream in("/proc/" + std::to_string(p) + "/cmdline");
    std::string argv0;
    std::getline(in, argv0, '\0');
    if (argv0 != brig_path) out.push_back(p);
  }
  return out;
}

TEST_F(BrigRun, SigkillOfBrigRunLeavesNoJailedProcess) {
  // A subreaper, so the jail's init, orphaned by the kill, comes to this test
  // and can be seen to exit (and is reaped) instead of going to the host's.
  // Only for this test: the guard ends it however the test ends.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  struct SubreaperGuard {
    ~SubreaperGuard() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
  } subreaper_guard;
  const std::string tag = "brig-run-kill-tag-" + std::to_string(::getpid());
  const std::string brig_path = testing::sibling_binary("brig");
  Child child({brig_path, "run", "--", "sh", "-c", "sleep 300; echo " + tag},
              Child::Options{.close_stdin = false, .close_stderr = false, .cwd = ws.path()});
  // The jailed sh is running: the jail is complete.
  ASSERT_TRUE(testing::wait_until([&] { return !jailed_with(tag, brig_path).empty(); }))
      << child.read_stderr(std::chrono::milliseconds(100));
  child.signal(SIGKILL);
  const auto status = child.wait();
  ASSERT_TRUE(status && WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL);
  // The init must notice brig is gone and end the jail, sh and sleep with it;
  // then nothing with the tag is left (a zombie's command line reads empty).
  bool orphans_left = true;
  const bool gone = testing::wait_until([&] {
    int st = 0;
    while (::waitpid(-1, &st, WNOHANG) > 0) {
    }
    orphans_left = ::waitpid(-1, &st, WNOHANG) != -1;  // -1/ECHILD: no child left
    return !orphans_left && testing::pids_with_cmdline(tag).empty();
  });
  EXPECT_TRUE(gone) << testing::pids_with_cmdline(tag).size() << " process(es) with " << tag
                    << " left";
  EXPECT_FALSE(orphans_left) << "the jail's init did not exit";
  EXPECT_EQ(child.read_stdout(), "") << "the command must not have gone on to echo";
}

TEST_F(BrigRun, JailSetupFailureExits125NamingTheStepAndErrno) {
  // A read-only path that is not optional and does not exist: the policy is
  // valid, the bind fails inside the jail's setup.
  TempDir policies;  // outside the workspace: a policy the jail could write is refused
  std::ofstream(policies.file("missing.toml"))
      << "extends = \"default\"\n[filesystem]\nread_only_add = [\"/nonexistent/brig-missing\"]\n";
  Ran r = run({"--policy", policies.file("missing.toml"), "--", "/bin/true"});
  EXPECT_EQ(r.status, 125);
  EXPECT_THAT(r.err,
              HasSubstr("brig run: setup failed at step mount: bind /nonexistent/brig-missing"));
  EXPECT_THAT(r.err, HasSubstr(": No such file or directory"));
  // The positive control: marked optional, the same path is skipped.
  std::ofstream(policies.file("optional.toml"))
      << "extends = \"default\"\n[filesystem]\nread_only_add = [{ path = "
         "\"/nonexistent/brig-missing\", optional = true }]\n";
  Ran ok = run({"--policy", policies.file("optional.toml"), "--", "/bin/true"});
  EXPECT_EQ(ok.status, 0) << ok.err;
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

TEST_F(BrigRun, TheJailsRootAndItsSkeletonDirectoriesCanBeListed) {
  // The root is brig's own tmpfs: it shows the mount points, nothing else.
  Ran root = run({"--", "/bin/ls", "/"});
  EXPECT_EQ(root.status, 0) << root.err;
  EXPECT_THAT(root.out, HasSubstr("usr\n"));
  EXPECT_THAT(root.out, HasSubstr("tmp\n"));
  // So is each directory on the way to the workspace (under the host's
  // /tmp here): only the workspace's own mount point is in its parent.
  const std::string parent = ws.path().substr(0, ws.path().rfind('/'));
  Ran up = run({"--", "/bin/ls", "-a", parent});
  EXPECT_EQ(up.status, 0) << up.err;
  EXPECT_EQ(up.out, ".\n..\n" + ws.path().substr(ws.path().rfind('/') + 1) + "\n");
  Ran find = run({"--", "/usr/bin/find", "/", "-maxdepth", "1", "-name", "usr"});
  EXPECT_EQ(find.status, 0) << find.err;
  EXPECT_EQ(find.out, "/usr\n");
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

TEST(BrigPolicy, CheckNamesTheHostDevicesAPolicyLetsIn) {
  TempDir dir;
  std::ofstream(dir.file("p.toml"))
      << "extends = \"default\"\n[filesystem]\n"
         "dangerously_devices = [\"/dev/fuse\", { path = \"/dev/net/tun\", optional = true }]\n";
  Ran r = brig({"policy", "check", dir.file("p.toml")}, dir.path());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\n  devices    /dev/fuse, /dev/net/tun (if present) "
                               "(dangerously_devices)\n"));
  // None asked for: no line.
  Ran plain = brig({"policy", "check", "default"}, dir.path());
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_THAT(plain.out, Not(HasSubstr("devices")));
}

// A hidden path in the workspace (the directory check runs in) is named as
// weak: the workspace is writable, so a mask there cannot hold.
TEST(BrigPolicy, CheckNamesHiddenPathsThatWouldNotHoldInThisWorkspace) {
  TempDir ws;
  TempDir policies;
  std::ofstream(policies.file("p.toml"))
      << "extends = \"default\"\n[filesystem]\nhidden_add = [\"" << ws.file(".env") << "\"]\n";
  Ran r = brig({"policy", "check", policies.file("p.toml")}, ws.path());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("weak       hidden " + ws.file(".env") + " (under the writable " +
                               ws.path() + "), with " + ws.path() + " as the workspace"));
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

// `brig policy check` and `show` list each LLM route and whether its key is
// there, never the key.
TEST(BrigPolicy, LlmRoutesAndWhetherTheirKeysArePresent) {
  TempDir policies;
  std::ofstream(policies.file("llm.toml")) << R"([[llm.routes]]
provider = "anthropic"
key_env = "BRIG_TEST_ANTHROPIC"
[[llm.routes]]
provider = "openai"
key_file = "/nonexistent/brig-test.key"
)";
  const std::string key = "sk-test-policy-show-91c2";
  Ran check = brig({"policy", "check", policies.file("llm.toml")}, policies.path(),
                   {"BRIG_TEST_ANTHROPIC=" + key});
  EXPECT_EQ(check.status, 0) << check.err;
  EXPECT_THAT(check.out, HasSubstr("llm        /anthropic -> https://api.anthropic.com; key "
                                   "present (BRIG_TEST_ANTHROPIC)"));
  EXPECT_THAT(check.out, HasSubstr("llm        /openai -> https://api.openai.com/v1; key MISSING"));
  Ran show = brig({"policy", "show", policies.file("llm.toml")}, policies.path(),
                  {"BRIG_TEST_ANTHROPIC=" + key});
  EXPECT_EQ(show.status, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("#   anthropic: present (BRIG_TEST_ANTHROPIC)"));
  EXPECT_THAT(show.out, HasSubstr("#   openai: MISSING"));
  for (const Ran* r : {&check, &show}) EXPECT_THAT(r->out + r->err, Not(HasSubstr(key)));
}

}  // namespace
}  // namespace brig::server
