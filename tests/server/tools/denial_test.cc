#include "server/tools/denial.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace brig::tools {
namespace {

using policy::PathRule;
using policy::Policy;
using policy::WorkspaceAccess;

Policy default_like() {
  Policy p;
  p.filesystem.read_only = {PathRule{"/usr"}, PathRule{"/etc"}};
  p.filesystem.hidden = {"/home/u/.ssh", "/home/u/.aws"};
  return p;
}

std::string explain(const Policy& p, std::string_view name, std::string_view path, Access access,
                    int err, bool host_root = false) {
  const DenialContext ctx{p, std::string(name), "/work/proj", "/home/u", host_root};
  return explain_denial(ctx, path, access, err).value_or("");
}

TEST(Denial, HiddenPathNamesTheRuleAsWritten) {
  const Policy p = default_like();
  const std::string s = explain(p, "default", "/home/u/.ssh/id_ed25519", Access::read, ENOENT);
  EXPECT_NE(s.find("filesystem.hidden contains \"~/.ssh\""), std::string::npos) << s;
  EXPECT_NE(s.find("policy default"), std::string::npos) << s;
  // Through "..", from the workspace.
  const std::string rel =
      explain(p, "default", "../../home/u/.aws/credentials", Access::read, ENOENT);
  EXPECT_NE(rel.find("\"~/.aws\""), std::string::npos) << rel;
}

TEST(Denial, ReadOnlyWorkspaceInStrict) {
  Policy p = default_like();
  p.filesystem.workspace = WorkspaceAccess::read_only;
  const std::string s = explain(p, "strict", "src/main.cc", Access::write, EROFS);
  EXPECT_NE(s.find("/work/proj/src/main.cc"), std::string::npos) << s;
  EXPECT_NE(s.find("filesystem.workspace = \"read_only\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"read_write\""), std::string::npos) << s;

  const std::string outside = explain(p, "strict", "/srv/data", Access::write, EROFS);
  EXPECT_NE(outside.find("not under any read_write path"), std::string::npos) << outside;
  EXPECT_NE(outside.find("the workspace is read-only in policy strict"), std::string::npos)
      << outside;
}

TEST(Denial, ReadOnlyPolicyPath) {
  const Policy p = default_like();
  const std::string s = explain(p, "default", "/usr/local/bin/x", Access::write, EROFS);
  EXPECT_NE(s.find("lists \"/usr\" in filesystem.read_only"), std::string::npos) << s;
  EXPECT_NE(s.find("filesystem.read_write"), std::string::npos) << s;
}

TEST(Denial, GitHooksStayReadOnly) {
  const Policy p = default_like();
  const std::string s = explain(p, "default", ".git/hooks/pre-commit", Access::write, EROFS);
  EXPECT_NE(s.find("dangerously_writable_git = false"), std::string::npos) << s;
  Policy open = p;
  open.filesystem.dangerously_writable_git = true;
  EXPECT_EQ(explain(open, "mine", ".git/hooks/pre-commit", Access::write, EACCES), "");
}

TEST(Denial, PathsOutsideTheJailAndThePrivateHome) {
  const Policy p = default_like();
  const std::string outside = explain(p, "default", "/srv/data/x", Access::read, ENOENT);
  EXPECT_NE(outside.find("outside the jail of policy default"), std::string::npos) << outside;
  const std::string home = explain(p, "default", "/home/u/notes.txt", Access::read, ENOENT);
  EXPECT_NE(home.find("filesystem.private_home = true"), std::string::npos) << home;
}

TEST(Denial, RootSecretsWhenBrigRunsAsRoot) {
  const Policy p = default_like();
  const std::string s = explain(p, "default", "/etc/shadow", Access::read, ENOENT, true);
  EXPECT_NE(s.find("dangerously_unmask_root_secrets = false"), std::string::npos) << s;
  EXPECT_EQ(explain(p, "default", "/etc/shadow", Access::read, EACCES, false), "");
  // Issue 15: the mask is /dev/null, which read_file refuses as a character
  // device (EINVAL); the rule must still be named.
  const std::string device = explain(p, "default", "/etc/shadow", Access::read, EINVAL, true);
  EXPECT_NE(device.find("dangerously_unmask_root_secrets = false"), std::string::npos) << device;
}

TEST(Denial, AHiddenFileReadAsACharacterDeviceNamesTheRule) {
  Policy p = default_like();
  p.filesystem.hidden.push_back("/etc/secret.conf");
  const std::string s = explain(p, "default", "/etc/secret.conf", Access::read, EINVAL);
  EXPECT_NE(s.find("filesystem.hidden contains \"/etc/secret.conf\""), std::string::npos) << s;
}

std::string refusal(const Policy& p, std::string_view path, std::string workspace = "/work/proj") {
  const DenialContext ctx{p, "default", std::move(workspace), "/home/u", false};
  return jail_private_refusal(ctx, path).value_or("");
}

// Issue 15: write_file /tmp/x.sh succeeded in the file worker's own /tmp,
// and exec sh /tmp/x.sh did not find it. The file tools refuse the trees
// each jail has to itself, saying why.
TEST(JailPrivate, TmpAndThePrivateHomeAreRefusedSayingWhy) {
  Policy p = default_like();
  p.filesystem.private_home = true;
  for (const char* path : {"/tmp/x.sh", "/tmp", "/dev/shm/y", "/home/u/notes.txt", "../../tmp/z"}) {
    const std::string s = refusal(p, path);
    EXPECT_NE(s.find("exec's commands get an empty one of their own"), std::string::npos)
        << path << ": " << s;
    EXPECT_NE(s.find("/work/proj"), std::string::npos) << s;
  }
  // The workspace, bound paths and everything else stay allowed.
  p.filesystem.read_write.push_back(PathRule{"/tmp/shared"});
  p.filesystem.read_only.push_back(PathRule{"/home/u/.gitconfig"});
  for (const char* path : {"a.txt", "/work/proj/b", "/tmp/shared/c", "/home/u/.gitconfig",
                           "/usr/include/stdio.h", "/tmpfoo"}) {
    EXPECT_EQ(refusal(p, path), "") << path;
  }
  EXPECT_NE(refusal(p, "/home/u/notes.txt").find("filesystem.private_home = true"),
            std::string::npos);
  // A hidden path is explained as hidden, once the worker fails on it.
  EXPECT_EQ(refusal(p, "/home/u/.ssh/id_ed25519"), "");
  // A workspace under /tmp is the workspace.
  EXPECT_EQ(refusal(p, "/tmp/ws/a.txt", "/tmp/ws"), "");
  EXPECT_NE(refusal(p, "/tmp/other", "/tmp/ws"), "");
  // Without a private home, the home is the host's, shared by every jail.
  p.filesystem.private_home = false;
  EXPECT_EQ(refusal(p, "/home/u/notes.txt"), "");
}

TEST(Denial, NothingToSayForOrdinaryErrors) {
  const Policy p = default_like();
  // Missing in a visible tree, host permissions in the workspace, other errnos.
  EXPECT_EQ(explain(p, "default", "missing.txt", Access::read, ENOENT), "");
  EXPECT_EQ(explain(p, "default", "/usr/share/nope", Access::read, ENOENT), "");
  EXPECT_EQ(explain(p, "default", "secret.txt", Access::read, EACCES), "");
  EXPECT_EQ(explain(p, "default", "a.txt", Access::write, EACCES), "");
  EXPECT_EQ(explain(p, "default", "/tmp/x", Access::write, EACCES), "");
  EXPECT_EQ(explain(p, "default", "a.txt", Access::write, ENOSPC), "");
  // Ancestors of bound paths exist in the jail as directories.
  EXPECT_EQ(explain(p, "default", "/work", Access::read, ENOENT), "");
}

}  // namespace
}  // namespace brig::tools
