// Principals: which sandbox a call runs in, by the identity of its client.
#include "server/tools/principals.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>

#include <asio/io_context.hpp>

#include "server/pool/worker_pool.h"
#include "tests/server/test_support.h"

namespace brig::tools {
namespace {

using server::testing::TempDir;

constexpr uid_t kNoSuchUid = 4000000001u;

class PrincipalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto own = sandbox::plan_sandbox("default", ws_.path(), ws_.path());
    ASSERT_TRUE(own) << own.error().to_string();
    own_ = std::move(*own);
  }

  Principals with_planner() {
    return Principals(
        io_.get_executor(), own_, /*own_workers=*/nullptr, [this](const sandbox::Account& account) {
          return sandbox::plan_sandbox_for(account, "default", ws_.path(), ws_.path());
        });
  }

  asio::io_context io_;
  TempDir ws_;
  sandbox::Sandbox own_;
};

TEST_F(PrincipalsTest, BrigsOwnCallsUseTheSandboxPlannedAtStartUp) {
  Principals principals = with_planner();
  auto none = principals.of(std::nullopt);
  ASSERT_TRUE(none);
  EXPECT_EQ(&none->sandbox, &own_) << "stdio";
  auto same = principals.of(process::PeerCredentials{1, ::geteuid(), ::getegid()});
  ASSERT_TRUE(same);
  EXPECT_EQ(&same->sandbox, &own_) << "a socket peer of brig's own uid";
}

TEST_F(PrincipalsTest, AnUnprivilegedBrigServesNoOtherUser) {
  if (::geteuid() == 0) GTEST_SKIP() << "a root brig serves other users as themselves";
  Principals principals = with_planner();
  auto other = principals.of(process::PeerCredentials{1, 0, 0});
  ASSERT_FALSE(other) << "root's calls would run with brig's permissions";
  EXPECT_NE(other.error().to_string().find("not root"), std::string::npos)
      << other.error().to_string();
}

TEST_F(PrincipalsTest, ARootBrigPlansAnotherUsersSandboxForItsIdsAndHome) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root brig serves other users";
  const passwd* pw = ::getpwnam("nobody");
  if (pw == nullptr) GTEST_SKIP() << "no user nobody";
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  const std::string home = pw->pw_dir;
  Principals principals = with_planner();
  auto other = principals.of(process::PeerCredentials{1, uid, gid});
  ASSERT_TRUE(other) << other.error().to_string();
  const sandbox::Sandbox& s = other->sandbox;
  EXPECT_NE(&s, &own_);
  EXPECT_EQ(s.spec.identity, (jail::Identity{uid, gid, uid, gid}));
  EXPECT_FALSE(s.host_root());
  EXPECT_EQ(s.context.home, home);
  EXPECT_NE(std::find(s.env.begin(), s.env.end(), "HOME=" + home), s.env.end());
  EXPECT_EQ(s.spawner, own_.spawner) << "one spawner clones every jail";
  auto again = principals.of(process::PeerCredentials{2, uid, gid});
  ASSERT_TRUE(again);
  EXPECT_EQ(&again->sandbox, &s) << "planned once per identity";
  EXPECT_NE(identity_refusal(s).find("uid " + std::to_string(uid)), std::string::npos);
  EXPECT_EQ(identity_refusal(own_), "");
}

// The write journal says which files the server may delete; a jail that
// could write there could plant entries. brig's own sandbox was checked at
// start-up, another user's jails may write elsewhere: their pool gets the
// journal only where their jails cannot write.
TEST_F(PrincipalsTest, AnotherUsersPoolKeepsNoJournalWhereItsJailsCanWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root brig serves other users";
  const passwd* pw = ::getpwnam("nobody");
  if (pw == nullptr) GTEST_SKIP() << "no user nobody";
  TempDir state;
  TempDir shared;  // writable in the other user's jails only
  const std::string policy = state.file("other.toml");
  std::ofstream(policy) << "extends = \"default\"\n[filesystem]\nread_write = [\"" << shared.path()
                        << "\"]\n";
  for (const auto& [root, kept] :
       {std::pair{shared.file("journal"), false}, std::pair{state.file("journal"), true}}) {
    pool::WorkerPool own_workers(io_.get_executor(), own_, "/nonexistent/brig-worker", root);
    ASSERT_EQ(own_workers.journal_root(), root);
    Principals principals(
        io_.get_executor(), own_, &own_workers,
        [&](const sandbox::Account& account) {
          return sandbox::plan_sandbox_for(account, policy, ws_.path(), ws_.path());
        },
        "/nonexistent/brig-worker");
    auto other = principals.of(process::PeerCredentials{1, pw->pw_uid, pw->pw_gid});
    ASSERT_TRUE(other) << other.error().to_string();
    ASSERT_NE(other->workers, nullptr);
    EXPECT_EQ(other->workers->journal_root(), kept ? root : "") << root;
  }
}

TEST_F(PrincipalsTest, AUserWithoutAPasswdEntryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root brig serves other users";
  Principals principals = with_planner();
  auto ghost = principals.of(process::PeerCredentials{1, kNoSuchUid, kNoSuchUid});
  ASSERT_FALSE(ghost);
  EXPECT_NE(ghost.error().to_string().find("no passwd entry"), std::string::npos)
      << ghost.error().to_string();
}

TEST_F(PrincipalsTest, WithoutAPlannerNoOtherUserIsServed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: unprivileged, no other user is served anyway";
  Principals principals(io_.get_executor(), own_, /*own_workers=*/nullptr);
  EXPECT_FALSE(principals.of(process::PeerCredentials{1, 65534, 65534}));
}

}  // namespace
}  // namespace brig::tools
