// brig as root with the shipped default policy: the jail's root is an
// unprivileged host uid (identity.as_root = "mapped"), so root-only host
// files are unreadable with no mask involved, while the workspace keeps its
// owner, root's or another user's, through an idmapped mount. The dangerous
// mode keeps the old behaviour. Root only: unprivileged, a jail always runs
// as its caller.
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/security/security_support.h"

namespace brig::security::test {
namespace {

using ::testing::HasSubstr;

class RootIdentityTest : public SecurityTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root brig maps the jail's root";
    SecurityTest::SetUp();
    ASSERT_EQ(::chmod(scratch_.path().c_str(), 01777), 0);
  }
  // Skipped in SetUp: nothing was started, and the leftover checks would
  // look for an empty marker (every process).
  void TearDown() override {
    if (::geteuid() == 0) SecurityTest::TearDown();
  }

  // default, plus a world-writable host directory bound read-write (not
  // kept: what the jail makes there shows its host ids), as_root as given.
  std::string policy_as(const std::string& as_root) {
    return policy_file("as-" + as_root,
                       "extends = \"default\"\n[filesystem]\nread_write_add = [\"" +
                           scratch_.path() + "\"]\n[identity]\nas_root = \"" + as_root + "\"\n");
  }

  static struct stat host_stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
  }

  TempDir scratch_;
};

TEST_F(RootIdentityTest, RootInTheJailIsNobodyOnTheHost) {
  const BrigRan ids = brig_run({"--", "sh", "-c", "id -u; id -g"});
  EXPECT_EQ(ids.status, 0) << ids.err;
  EXPECT_EQ(ids.out, "0\n0\n");

  const std::string made = scratch_.path() + "/made";
  const BrigRan write =
      brig_run({"--policy", policy_as("mapped"), "--", "sh", "-c", "echo x > " + made});
  ASSERT_EQ(write.status, 0) << write.err;
  EXPECT_EQ(host_stat(made).st_uid, 65534u);
  EXPECT_EQ(host_stat(made).st_gid, 65534u);
}

// A root-only file in a read-only bind (/etc/shadow in the default policy's
// /etc) is unreadable with nothing masked.
TEST_F(RootIdentityTest, RootOnlyHostFilesAreUnreadableWithoutAMask) {
  const Planned p = plan_default({"read", "/etc/shadow"});
  for (const jail::Mount& m : p.spec.mounts)
    EXPECT_FALSE(m.target.starts_with("/etc/")) << m.target << " is masked";
  EXPECT_EQ(run(p).out, "err=EACCES (open)\n");
}

TEST_F(RootIdentityTest, RootOwnedWorkspaceStaysRootsAndWritable) {
  ASSERT_EQ(::chmod(workspace().c_str(), 0700), 0);
  const std::string old_file = workspace() + "/old";
  std::ofstream(old_file) << "old\n";
  ASSERT_EQ(::chmod(old_file.c_str(), 0600), 0);
  const BrigRan ran = brig_run({"--", "sh", "-c", "echo more >> old && echo new > new && id -u"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "0\n");
  std::ifstream in(old_file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "old\nmore\n");
  const struct stat st = host_stat(workspace() + "/new");
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, 0u);
}

TEST_F(RootIdentityTest, AnotherUsersWorkspaceKeepsThatOwner) {
  const passwd* pw = ::getpwnam("brig-test");
  if (pw == nullptr) GTEST_SKIP() << "no user brig-test (scripts/test.sh makes it)";
  const std::string theirs = workspace() + "/theirs";
  std::ofstream(theirs) << "theirs\n";
  ASSERT_EQ(::chmod(theirs.c_str(), 0600), 0);
  for (const std::string& p : {workspace(), theirs, probe_path()})
    ASSERT_EQ(::chown(p.c_str(), pw->pw_uid, pw->pw_gid), 0) << p;
  ASSERT_EQ(::chmod(workspace().c_str(), 0700), 0);
  const BrigRan ran = brig_run(
      {"--", "sh", "-c", "echo more >> theirs && echo new > new && id -u && stat -c %u new"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "0\n0\n");  // the owner is the jail's root
  const struct stat st = host_stat(workspace() + "/new");
  EXPECT_EQ(st.st_uid, pw->pw_uid);
  EXPECT_EQ(st.st_gid, pw->pw_gid);
  EXPECT_EQ(host_stat(theirs).st_size, 12);
}

TEST_F(RootIdentityTest, DangerouslyHostRootKeepsTheOldBehaviour) {
  const std::string policy = policy_as("dangerously_host_root");
  const std::string made = scratch_.path() + "/made";
  const BrigRan ran = brig_run(
      {"--policy", policy, "--", "sh", "-c", "id -u; echo x > " + made + "; wc -c < /etc/shadow"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  EXPECT_EQ(ran.out, "0\n0\n");  // host root, with root's secrets masked (empty)
  EXPECT_EQ(host_stat(made).st_uid, 0u);
  Planned p = plan(policy, {"status"});
  EXPECT_EQ(p.spec.identity, (jail::Identity{0, 0, 0, 0}));
  for (const jail::Mount& m : p.spec.mounts) EXPECT_FALSE(m.keep_owner) << m.target;
}

}  // namespace
}  // namespace brig::security::test
