// What one jail writes must never widen the next one. Each attack plants
// state through one `brig run` (as an agent's command would) and attacks
// through the next, as root and as an unprivileged user; the workspace, its
// .git and every symlink in them are the attacker's.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/security/security_support.h"
#include "tests/server/test_support.h"

namespace brig::security::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

void write_host_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
  { std::ofstream(path) << text; }
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Every path under `dir` with its type and mode, sorted: what a jail changed.
std::string listing(const std::string& dir) {
  std::vector<std::string> rows;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st;
    ::lstat(e.path().c_str(), &st);
    rows.push_back(e.path().string() + " " + std::to_string(st.st_mode) + " " +
                   std::to_string(st.st_size));
  }
  std::sort(rows.begin(), rows.end());
  std::string out;
  for (const auto& r : rows) out += r + "\n";
  return out;
}

// The path of `to` relative to the directory `from` (both absolute and canonical).
std::string relative(const std::string& to, const std::string& from) {
  return fs::relative(to, from).string();
}

class PlantedStateTest : public SecurityTest {
 protected:
  // `brig run [--policy P] -- sh -c SCRIPT` from the workspace.
  BrigRan sh(const std::string& script, const std::string& policy = "") {
    std::vector<std::string> args;
    if (!policy.empty()) args = {"--policy", policy};
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return brig_run(args);
  }
};

// Way out 1: a .git file and a "worktree" of the jail's making once got brig
// to bind any host directory read-write into the next jail.
TEST_F(PlantedStateTest, PlantedWorktreeBindsNoHostDirectory) {
  TempDir outside;
  write_host_file((outside.path() + "/keep"), "host\n");
  const BrigRan plant = sh("mkdir fake && echo " + workspace() + "/.git > fake/gitdir && echo " +
                           outside.path() + " > fake/commondir && echo 'gitdir: fake' > .git");
  ASSERT_EQ(plant.status, 0) << plant.err;

  const BrigRan attack = sh("echo x > " + (outside.path() + "/pwned"));
  EXPECT_NE(attack.status, 0);
  EXPECT_FALSE(exists((outside.path() + "/pwned")));
  // Nor through the worktree's own paths.
  const BrigRan through = sh("echo x > fake/commondir/../pwned; echo x > .git/../pwned2; true");
  EXPECT_FALSE(exists((outside.path() + "/pwned")));
  EXPECT_EQ(listing(outside.path()), outside.path() + "/keep 33188 5\n");

  // The same with a relative commondir and `..` inside the pointers. The
  // .git file is pinned now, so the jail starts again from none.
  ASSERT_EQ(::unlink((workspace() + "/.git").c_str()), 0);
  const BrigRan relative_plant = sh("echo ../" + relative(outside.path(), workspace() + "/fake") +
                                    " > fake/commondir && echo 'gitdir: ./fake/../fake' > .git");
  ASSERT_EQ(relative_plant.status, 0) << relative_plant.err;
  EXPECT_NE(sh("echo x > " + (outside.path() + "/pwned")).status, 0);
  EXPECT_FALSE(exists((outside.path() + "/pwned")));
}

// Way out 2: core.hooksPath through a relative symlink once mounted a host
// file over a mask (/etc/shadow as root; any hidden path unprivileged).
TEST_F(PlantedStateTest, HooksPathThroughASymlinkShowsNoHiddenFile) {
  ASSERT_EQ(::mkdir((workspace() + "/secret").c_str(), 0700), 0);
  write_host_file(workspace() + "/secret/id", "PRIVATE KEY\n", 0600);
  const std::string hiding = policy_file("hide-secret",
                                         "extends = \"default\"\n"
                                         "[filesystem]\n"
                                         "hidden_add = [\"" +
                                             workspace() + "/secret/id\"]\n");
  const BrigRan before = sh("cat secret/id; true", hiding);
  ASSERT_THAT(before.out, Not(HasSubstr("PRIVATE KEY")));
  const BrigRan plant =
      sh("mkdir -p .git/hooks && printf '[core]\\n\\thooksPath = zlink/id\\n' > .git/config && "
         "ln -s secret zlink",
         hiding);
  ASSERT_EQ(plant.status, 0) << plant.err;

  const BrigRan attack = sh("cat secret/id zlink/id; true", hiding);
  EXPECT_THAT(attack.out, Not(HasSubstr("PRIVATE KEY")));
}

TEST_F(PlantedStateTest, HooksPathThroughASymlinkShowsNoRootSecret) {
  if (::geteuid() != 0) GTEST_SKIP() << "root's masked /etc/shadow; unprivileged it is unreadable";
  const BrigRan plant =
      sh("mkdir -p .git/hooks && printf '[core]\\n\\thooksPath = etc/shadow\\n' > "
         ".git/config && ln -s " +
         relative("/etc", workspace()) + " etc");
  ASSERT_EQ(plant.status, 0) << plant.err;
  const BrigRan attack = sh("cat etc/shadow /etc/shadow 2>/dev/null | head -c 200; true");
  EXPECT_THAT(attack.out, Not(HasSubstr("root:")));
}

// Way out 3: `.git` itself writable let a jail add commondir (or hooks, a
// config, alternates) that the host's git then obeys. What git reads as
// configuration cannot be changed; new top-level names stay in the jail that
// made them; .git cannot be moved away. (tests/jail/git_state_test.cc has
// what git itself may write.)
TEST_F(PlantedStateTest, GitMetadataCannotBeAddedChangedOrMoved) {
  ASSERT_EQ(std::system(("git init -q " + workspace() + " 2>/dev/null").c_str()), 0);
  const std::string before = listing(workspace() + "/.git");
  const char* refused[] = {
      "echo x > .git/hooks/post-checkout",
      "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config",
      "echo x > .git/info/attributes",
      "echo /etc > .git/objects/info/alternates",
      "rm -rf .git/hooks",
      "mv .git .git-away",
  };
  for (const char* a : refused) {
    const BrigRan ran = sh(a);
    EXPECT_NE(ran.status, 0) << a;
    EXPECT_EQ(listing(workspace() + "/.git"), before) << a;
  }
  const char* private_to_the_jail[] = {
      "echo ../evil > .git/commondir",
      "echo '[core]' > .git/config.worktree",
      "mkdir -p .git/worktrees/x && echo /etc > .git/worktrees/x/gitdir",
      "ln -s ../evil .git/commondir",
      "mkdir .git/hooks2 && git config core.hooksPath .git/hooks2",
  };
  for (const char* a : private_to_the_jail) {
    sh(a);
    EXPECT_EQ(listing(workspace() + "/.git"), before) << a;
  }
  EXPECT_FALSE(exists(workspace() + "/.git-away"));

  // Control: the same plant succeeds where the policy lets .git be written.
  const std::string writable = policy_file("writable-git",
                                           "extends = \"default\"\n"
                                           "[filesystem]\n"
                                           "dangerously_writable_git = true\n");
  const BrigRan control = sh("echo ../evil > .git/commondir", writable);
  EXPECT_EQ(control.status, 0) << control.err;
  EXPECT_TRUE(exists(workspace() + "/.git/commondir"));
}

// The file tools plant nothing an exec could not: write_file and edit_file
// through `brig serve` against the same .git.
TEST_F(PlantedStateTest, FileToolsCannotPlantGitMetadata) {
  namespace st = server::testing;
  ASSERT_EQ(std::system(("git init -q " + workspace() + " 2>/dev/null").c_str()), 0);
  const std::string before = listing(workspace() + "/.git");
  st::Child server({jail::test::bin_dir() + "/brig", "serve", "--workspace", workspace()},
                   st::Child::Options{.cwd = workspace()});
  st::LineClient client = server.take_client();
  ASSERT_TRUE(st::initialize(client));
  int id = 1;
  for (const char* path : {".git/commondir", ".git/hooks/pre-commit", ".git/config",
                           ".git/objects/info/alternates", ".git/info/attributes"}) {
    ASSERT_TRUE(
        client.send(st::tool_call(id, "write_file", {{"path", path}, {"content", "../evil\n"}})));
    const auto reply = client.read_response(id++);
    ASSERT_TRUE(reply) << path;
    EXPECT_EQ((*reply)["result"].value("isError", false), true) << path << ": " << reply->dump();
  }
  ASSERT_TRUE(client.send(st::tool_call(
      id, "edit_file",
      {{"path", ".git/HEAD"}, {"edits", {{{"old_text", "ref"}, {"new_text", "x"}}}}})));
  const auto edit = client.read_response(id);
  ASSERT_TRUE(edit);
  EXPECT_EQ((*edit)["result"].value("isError", false), true) << edit->dump();
  EXPECT_EQ(listing(workspace() + "/.git"), before);
  // End of input ends brig; its spawner and worker die with it and come to
  // this subreaper, which reaps them before the leftover checks.
  client.close_write();
  EXPECT_TRUE(server.wait());
  while (::waitpid(-1, nullptr, 0) > 0) {
  }
}

// A .git file is a pointer host git follows: the jail can neither rewrite it
// nor replace it with a repository of its own.
TEST_F(PlantedStateTest, GitFileStaysPinned) {
  write_host_file(workspace() + "/.git", "gitdir: /nonexistent\n");
  EXPECT_NE(sh("echo 'gitdir: fake' > .git").status, 0);
  EXPECT_NE(sh("rm -f .git && mkdir .git").status, 0);
  std::ifstream in(workspace() + "/.git");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "gitdir: /nonexistent");
}

// Way out 4: hidden holds for the real file, also when the hidden path is a
// symlink on the host.
TEST_F(PlantedStateTest, HiddenSymlinkMasksTheFileItLeadsTo) {
  TempDir data;
  write_host_file((data.path() + "/token"), "TOKEN\n", 0644);
  ASSERT_EQ(::symlink((data.path() + "/token").c_str(), (data.path() + "/link").c_str()), 0);
  const std::string hidden = policy_file("hidden-link",
                                         "extends = \"default\"\n"
                                         "[filesystem]\n"
                                         "read_only_add = [\"" +
                                             data.path() +
                                             "\"]\n"
                                             "hidden_add = [\"" +
                                             (data.path() + "/link") + "\"]\n");
  const BrigRan attack =
      sh("cat " + (data.path() + "/token") + " " + (data.path() + "/link") + "; true", hidden);
  EXPECT_THAT(attack.out, Not(HasSubstr("TOKEN")));

  const std::string shown =
      policy_file("shown-link", "extends = \"default\"\n[filesystem]\nread_only_add = [\"" +
                                    data.path() + "\"]\n");
  const BrigRan control = sh("cat " + (data.path() + "/token"), shown);
  EXPECT_EQ(control.status, 0) << control.err;
  EXPECT_EQ(control.out, "TOKEN\n");
}

// A symlink planted at a hidden path must not turn the mask on the file it
// names (libc here): every later jail of every client would fail.
// Way out 4, "hidden is decided once": a token the host writes after the
// jail was planned, one it replaces by rename (which lifts a mask from the
// old file in every mount namespace), and a hidden directory it moves away
// and makes anew, all while a command runs. None may show.
TEST_F(PlantedStateTest, HiddenPathsTheHostChangesWhileAJailRunsStayHidden) {
  TempDir data;
  write_host_file(data.path() + "/replaced", "OLD\n", 0644);
  ASSERT_EQ(::mkdir((data.path() + "/keys").c_str(), 0755), 0);
  write_host_file(data.path() + "/keys/id", "OLDKEY\n", 0644);
  write_host_file(data.path() + "/visible", "VISIBLE\n", 0644);
  const std::string d = data.path();
  const std::string policy =
      policy_file("hidden-later", "extends = \"default\"\n[filesystem]\nread_only_add = [\"" + d +
                                      "\"]\nhidden_add = [\"" + d + "/later\", \"" + d +
                                      "/replaced\", \"" + d + "/keys\"]\n");
  const std::string ws = workspace();
  BrigRan ran;
  std::thread jail([&] {
    ran = sh("touch " + ws + "/started; while [ ! -e " + ws + "/go ]; do sleep 0.05; done; cat " +
                 d + "/later " + d + "/replaced " + d + "/keys/id " + d + "/visible 2>&1; ls " + d +
                 "; true",
             policy);
  });
  for (int i = 0; i < 600 && !exists(ws + "/started"); ++i) ::usleep(50 * 1000);
  EXPECT_TRUE(exists(ws + "/started"));
  write_host_file(d + "/later", "LATER\n", 0644);
  write_host_file(d + "/replaced.tmp", "NEW\n", 0644);
  EXPECT_EQ(::rename((d + "/replaced.tmp").c_str(), (d + "/replaced").c_str()), 0);
  EXPECT_EQ(::rename((d + "/keys").c_str(), (d + "/keys.old").c_str()), 0);
  ASSERT_EQ(::mkdir((d + "/keys").c_str(), 0755), 0);
  write_host_file(d + "/keys/id", "NEWKEY\n", 0644);
  write_host_file(ws + "/go", "", 0644);
  jail.join();
  for (const char* secret : {"LATER", "OLD\n", "NEW", "OLDKEY", "NEWKEY"})
    EXPECT_THAT(ran.out, Not(HasSubstr(secret))) << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("VISIBLE")) << "the control: the rest of the directory shows";
}

TEST_F(PlantedStateTest, SymlinkAtAHiddenPathMasksNothingElse) {
  char libc[PATH_MAX];
  ASSERT_NE(::realpath("/lib/x86_64-linux-gnu/libc.so.6", libc), nullptr);
  const std::string hiding = policy_file("hide-env",
                                         "extends = \"default\"\n"
                                         "[filesystem]\n"
                                         "hidden_add = [\"" +
                                             workspace() + "/.env\"]\n");
  ASSERT_EQ(sh(std::string("ln -s ") + libc + " .env", hiding).status, 0);
  const BrigRan later = sh("echo still here", hiding);
  EXPECT_EQ(later.status, 0) << later.err;
  EXPECT_EQ(later.out, "still here\n");
}

// Way out 5: a policy file the jail can rewrite decides the next jail.
TEST_F(PlantedStateTest, PolicyFileTheJailCouldWriteIsRefused) {
  const std::string toml = "extends = \"default\"\n";
  write_host_file(workspace() + "/mine.toml", toml);
  const BrigRan inside = brig_run({"--policy", "./mine.toml", "--", "/bin/true"});
  EXPECT_EQ(inside.status, 125);
  EXPECT_THAT(inside.err, HasSubstr(workspace() + "/mine.toml"));
  EXPECT_THAT(inside.err, HasSubstr("could rewrite it"));

  // A symlink in the workspace to a file outside: the jail could retarget it.
  const std::string outside = policy_file("outside", toml);
  ASSERT_EQ(::symlink(outside.c_str(), (workspace() + "/link.toml").c_str()), 0);
  const BrigRan linked = brig_run({"--policy", workspace() + "/link.toml", "--", "/bin/true"});
  EXPECT_EQ(linked.status, 125);
  EXPECT_THAT(linked.err, HasSubstr("could rewrite it"));

  // Control: the same policy outside every writable path.
  EXPECT_EQ(brig_run({"--policy", outside, "--", "/bin/true"}).status, 0);
}

// Way out 8: a symlink planted at an optional bound path is skipped, and
// never stops later jails; a required one is refused, naming the path.
TEST_F(PlantedStateTest, SymlinkAtABoundPathIsNeverFollowed) {
  const std::string optional = policy_file(
      "optional-vendor", "extends = \"default\"\n[filesystem]\nread_only_add = [{ path = \"" +
                             workspace() + "/vendor\", optional = true }]\n");
  ASSERT_EQ(sh("ln -s /etc vendor", optional).status, 0);
  const BrigRan later = sh("test -L vendor", optional);
  EXPECT_EQ(later.status, 0) << later.err;

  const std::string required =
      policy_file("required-vendor", "extends = \"default\"\n[filesystem]\nread_only_add = [\"" +
                                         workspace() + "/vendor/lib\"]\n");
  const BrigRan refused = sh("true", required);
  EXPECT_EQ(refused.status, 125);
  EXPECT_THAT(refused.err, HasSubstr(workspace() + "/vendor/lib"));
  EXPECT_THAT(refused.err, HasSubstr("symlink"));
}

// Way out 8: /proc files only root may read describe the host kernel; masked
// in every tier (as root, the jail's uid 0 could read them otherwise).
TEST_F(PlantedStateTest, RootOnlyProcFilesShowNothing) {
  for (const char* f : {"/proc/kpageflags", "/proc/slabinfo", "/proc/vmallocinfo"}) {
    if (!exists(f)) continue;
    const BrigRan ran = sh(std::string("head -c 64 ") + f + " 2>/dev/null | wc -c");
    EXPECT_EQ(ran.out, "0\n") << f;
  }
}

}  // namespace
}  // namespace brig::security::test
