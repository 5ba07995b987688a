// A root launcher's jail whose root is not host root (Identity::map_launcher
// false): uid 0 inside is an unprivileged host uid, the uid map holds nothing
// else, and the workspace keeps its owner through an idmapped tree. Root
// only (an unprivileged launcher maps its own ids and nothing else).
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "jail/launcher.h"
#include "jail/steps/idmap.h"
#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr uid_t kJailHostUid = 65534;
constexpr gid_t kJailHostGid = 65534;

class IdentityTest : public JailTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: only root maps another host uid";
    JailTest::SetUp();
  }
  // Skipped in SetUp: nothing was started, and the leftover checks would
  // look for an empty marker (every process).
  void TearDown() override {
    if (::geteuid() == 0) JailTest::TearDown();
  }

  // base_spec with the jail's root mapped to nobody and the workspace kept.
  JailSpec mapped() const { return mapped(workspace_.path()); }
  static JailSpec mapped(const std::string& workspace) {
    JailSpec s = base_spec(workspace);
    s.identity = {0, 0, kJailHostUid, kJailHostGid, /*map_launcher=*/false};
    for (Mount& m : s.mounts)
      if (m.kind == Mount::Kind::bind && m.target == workspace) m.keep_owner = true;
    return s;
  }

  // Makes this test process's mount namespace its own (private: nothing
  // it mounts reaches the host), once.
  static void own_mount_namespace() {
    static bool done = false;
    if (done) return;
    ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << strerror(errno);
    ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << strerror(errno);
    done = true;
  }

  // A read-write bind of a fresh world-writable host directory at its own
  // path: files the jail makes there keep the jail's host ids (not kept).
  static void add_plain_writable(JailSpec& s, const std::string& dir) {
    ::chmod(dir.c_str(), 01777);
    Mount m;
    m.source = m.target = dir;
    m.writable = true;
    s.mounts.push_back(m);
    s.landlock.read_write.push_back(dir);
  }

  static struct stat host_stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
  }

  // The "Uid:" line of /proc/<pid>/status, as the host sees it.
  static std::string host_uid_line(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.starts_with("Uid:")) return line;
    return "";
  }
};

TEST_F(IdentityTest, RootInsideIsAnUnprivilegedHostUid) {
  TempDir scratch;
  JailSpec s = mapped();
  add_plain_writable(s, scratch.path());
  const Ran ran = run_jail(s, probe_request({"status"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("uid=0"));
  EXPECT_THAT(l, Contains("gid=0"));
  EXPECT_THAT(l, Contains("Groups:\t "));  // root's supplementary groups are gone
  EXPECT_THAT(l, Contains("CapEff:\t0000000000000000"));

  // From outside: a file the jail's root makes outside the workspace is the
  // unprivileged host uid's.
  const Ran made = run_jail(s, probe_request({"write", scratch.path() + "/made"}));
  ASSERT_EQ(made.out, "ok\n") << made.outcome.to_string() << made.err;
  const struct stat st = host_stat(scratch.path() + "/made");
  EXPECT_EQ(st.st_uid, kJailHostUid);
  EXPECT_EQ(st.st_gid, kJailHostGid);
}

// Every process of the jail, its init included, is the unprivileged uid:
// host root is in no map.
TEST_F(IdentityTest, NoProcessOfTheJailIsHostRoot) {
  auto j = spawn(mapped(), probe_request({"sleep", "30", marker()}));
  ASSERT_TRUE(j) << j.error().to_string();
  const std::string nobody = "Uid:\t65534\t65534\t65534\t65534";
  std::vector<pid_t> command;
  for (int i = 0; i < 500 && command.empty(); ++i) {
    command = processes_with(marker());
    if (command.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(command.size(), 1u);
  EXPECT_EQ(host_uid_line(command[0]), nobody);
  EXPECT_EQ(host_uid_line(j->pid()), nobody);  // the init
  std::ifstream map("/proc/" + std::to_string(command[0]) + "/uid_map");
  std::stringstream text;
  text << map.rdbuf();
  std::istringstream fields(text.str());
  std::string inside, outside, count, extra;
  fields >> inside >> outside >> count >> extra;
  EXPECT_EQ(inside + " " + outside + " " + count, "0 65534 1");
  EXPECT_EQ(extra, "") << "a second line in the uid map: " << text.str();
  j->signal(SIGKILL);
  (void)wait(*j);
}

// A root-only file that a read-only bind shows is unreadable, with no mask:
// the jail's root is not its owner.
TEST_F(IdentityTest, RootOnlyHostFilesAreUnreadableWithoutAMask) {
  TempDir shown;
  const std::string secret = shown.path() + "/secret";
  std::ofstream(secret) << "root only\n";
  ::chmod(secret.c_str(), 0600);
  JailSpec s = mapped();
  Mount m;
  m.source = m.target = shown.path();
  s.mounts.push_back(m);
  s.landlock.read_only.push_back(shown.path());
  for (const Mount& mount : s.mounts) ASSERT_NE(mount.kind, Mount::Kind::mask);
  const Ran ran = run_jail(s, probe_request({"read", secret}));
  EXPECT_EQ(ran.out, "err=EACCES (open)\n") << ran.outcome.to_string() << ran.err;
  const Ran shadow = run_jail(s, probe_request({"read", "/etc/shadow"}));
  EXPECT_EQ(shadow.out, "err=EACCES (open)\n") << shadow.outcome.to_string() << shadow.err;
}

// A root-owned workspace, closed to others (0700), stays root's to the jail:
// its files are writable and new ones are root's on disk.
TEST_F(IdentityTest, RootOwnedWorkspaceKeepsItsOwner) {
  const std::string ws = workspace_.path();
  ASSERT_EQ(::chmod(ws.c_str(), 0700), 0);
  const std::string old_file = ws + "/old";
  std::ofstream(old_file) << "mine\n";
  ::chmod(old_file.c_str(), 0600);
  const Ran append = run_jail(mapped(), probe_request({"write", old_file}));
  EXPECT_EQ(append.out, "ok\n") << append.outcome.to_string() << append.err;
  const Ran made = run_jail(mapped(), probe_request({"write", ws + "/new"}));
  ASSERT_EQ(made.out, "ok\n") << made.outcome.to_string() << made.err;
  const struct stat st = host_stat(ws + "/new");
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, 0u);
  EXPECT_EQ(host_stat(old_file).st_uid, 0u);
}

// Another user's workspace the same way: its owner appears as the jail's
// root, and what the jail makes is that owner's.
TEST_F(IdentityTest, AnotherUsersWorkspaceKeepsItsOwner) {
  constexpr uid_t kOwner = 4242;
  constexpr gid_t kGroup = 4243;
  const std::string ws = workspace_.path();
  const std::string theirs = ws + "/theirs";
  std::ofstream(theirs) << "data\n";
  ASSERT_EQ(::chown(theirs.c_str(), kOwner, kGroup), 0);
  ::chmod(theirs.c_str(), 0600);
  ASSERT_EQ(::chown(ws.c_str(), kOwner, kGroup), 0);
  ASSERT_EQ(::chmod(ws.c_str(), 0700), 0);
  const Ran append = run_jail(mapped(), probe_request({"write", theirs}));
  EXPECT_EQ(append.out, "ok\n") << append.outcome.to_string() << append.err;
  const Ran made = run_jail(mapped(), probe_request({"write", ws + "/new"}));
  ASSERT_EQ(made.out, "ok\n") << made.outcome.to_string() << made.err;
  const struct stat st = host_stat(ws + "/new");
  EXPECT_EQ(st.st_uid, kOwner);
  EXPECT_EQ(st.st_gid, kGroup);
  const Ran status = run_jail(mapped(), probe_request({"status"}));
  EXPECT_THAT(lines(status.out), Contains("uid=0"));
  ASSERT_EQ(::chown(ws.c_str(), 0, 0), 0);  // for TempDir's removal (root anyway)
}

// A bind inside the workspace (.git, read-only) is made from the kept tree:
// it works in a 0700 root workspace the unprivileged init could not walk on
// the host, shows the same owner, and stays read-only.
TEST_F(IdentityTest, GitInsideAClosedWorkspaceComesFromTheKeptTree) {
  const std::string ws = workspace_.path();
  ASSERT_EQ(::chmod(ws.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((ws + "/.git").c_str(), 0700), 0);
  std::ofstream(ws + "/.git/config") << "[core]\n";
  ::chmod((ws + "/.git/config").c_str(), 0600);
  JailSpec s = mapped();
  Mount git;
  git.source = git.target = ws + "/.git";
  git.optional = true;
  s.mounts.push_back(git);
  const Ran read = run_jail(s, probe_request({"read", ws + "/.git/config"}));
  EXPECT_EQ(read.out, "[core]\nbytes=7\n") << read.outcome.to_string() << read.err;
  const Ran write = run_jail(s, probe_request({"write", ws + "/.git/config"}));
  EXPECT_THAT(write.out, HasSubstr("err=EROFS")) << write.outcome.to_string() << write.err;
}

// The tree is cloned in the launcher's mount namespace, where the
// workspace's mount may be shared (systemd makes / shared): it is made
// private before the jail gets it, so the mounts the jail makes inside it
// (.git read-only) never propagate to the host.
TEST_F(IdentityTest, MountsInsideTheKeptTreeNeverReachTheHost) {
  own_mount_namespace();
  TempDir shared;
  ASSERT_EQ(::mount("tmpfs", shared.path().c_str(), "tmpfs", 0, "mode=0755"), 0) << strerror(errno);
  ASSERT_EQ(::mount(nullptr, shared.path().c_str(), nullptr, MS_SHARED, nullptr), 0);
  const std::string ws = shared.path() + "/ws";
  ASSERT_EQ(::mkdir(ws.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((ws + "/.git").c_str(), 0700), 0);
  std::ofstream(ws + "/.git/HEAD") << "ref: refs/heads/main\n";
  JailSpec s = mapped(ws);
  Mount git;
  git.source = git.target = ws + "/.git";
  s.mounts.push_back(git);
  const Ran ran = run_jail(s, probe_request({"write", ws + "/.git/HEAD"}));
  EXPECT_THAT(ran.out, HasSubstr("err=EROFS")) << ran.outcome.to_string() << ran.err;
  std::ifstream info("/proc/self/mountinfo");
  std::stringstream text;
  text << info.rdbuf();
  EXPECT_THAT(text.str(), ::testing::Not(HasSubstr(ws + "/.git"))) << text.str();
  ASSERT_EQ(::umount2(shared.path().c_str(), MNT_DETACH), 0);
}

// The cgroups the root launcher made are joined by the command and gone
// after the jail, though the unprivileged init cannot remove them itself.
TEST_F(IdentityTest, CgroupsAreJoinedAndRemoved) {
  JailSpec s = mapped();
  s.limits.pids = 64;
  const Ran ran = run_jail(s, probe_request({"status"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  const LayerStatus* cg = ran.outcome.layers.find(Layer::cgroups);
  ASSERT_NE(cg, nullptr);
  EXPECT_EQ(cg->state, LayerState::enforced) << cg->detail;
  EXPECT_TRUE(our_cgroups().empty());
  // The limit holds: more processes than it allows cannot be made.
  const Ran forks = run_jail(s, probe_request({"forks", "100"}));
  EXPECT_THAT(forks.out, HasSubstr("EAGAIN")) << forks.outcome.to_string() << forks.err;
  EXPECT_TRUE(our_cgroups().empty());
}

// Where the filesystem refuses an idmapped mount, the jail fails saying so,
// and what to choose instead; nothing is shown some other way.
TEST_F(IdentityTest, FilesystemWithoutIdmappedMountsFailsTheJail) {
  // A ramfs in a mount namespace of this test process's own.
  own_mount_namespace();
  TempDir ram;
  ASSERT_EQ(::mount("ramfs", ram.path().c_str(), "ramfs", 0, "mode=0755"), 0) << strerror(errno);
  JailSpec s = mapped();
  Mount m;
  m.source = m.target = ram.path();
  m.writable = true;
  m.keep_owner = true;
  s.mounts.push_back(m);
  auto j = spawn(s, probe_request({"status"}));
  const std::string probed = idmap::probe(ram.path(), kJailHostUid, kJailHostGid);
  ::umount2(ram.path().c_str(), MNT_DETACH);
  if (j) GTEST_SKIP() << "this kernel's ramfs takes idmapped mounts";
  EXPECT_EQ(j.error().step, SetupStep::mount);
  EXPECT_EQ(j.error().sys_errno, EINVAL);
  EXPECT_THAT(j.error().to_string(), HasSubstr("mount_setattr(MOUNT_ATTR_IDMAP)"));
  EXPECT_THAT(j.error().to_string(), HasSubstr("ramfs"));
  EXPECT_THAT(j.error().to_string(), HasSubstr("identity.as_root = \"user\""));
  EXPECT_THAT(j.error().to_string(), HasSubstr("dangerously_host_root"));
  EXPECT_THAT(probed, HasSubstr("does not support idmapped mounts"));
  EXPECT_EQ(idmap::probe(workspace_.path(), kJailHostUid, kJailHostGid), "");
}

// Unprivileged, no idmapped tree can be made (it needs CAP_SYS_ADMIN in
// the host's user namespace): refused before clone, saying so.
TEST(IdentityUnprivilegedTest, KeepingAnOwnerNeedsRoot) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may make idmapped trees";
  TempDir ws;
  JailSpec s = base_spec(ws.path());
  for (Mount& m : s.mounts)
    if (m.target == ws.path()) m.keep_owner = true;
  auto j = spawn(s, probe_request({"status"}));
  ASSERT_FALSE(j);
  EXPECT_EQ(j.error().step, SetupStep::mount);
  EXPECT_THAT(j.error().why, HasSubstr("needs brig to run as root"));
}

}  // namespace
}  // namespace brig::jail::test
