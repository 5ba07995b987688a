#include "jail/spec_validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace brig::jail {
namespace {

using ::testing::HasSubstr;

Mount bind_at(std::string path, bool writable = false) {
  Mount m;
  m.source = m.target = std::move(path);
  m.writable = writable;
  return m;
}

TEST(SpecValidateTest, DefaultSpecWithOrderedMountsIsValid) {
  JailSpec s;
  s.mounts = {bind_at("/usr"), bind_at("/home/u/ws", true), bind_at("/home/u/ws/.git", true),
              bind_at("/home/u/ws/.git/hooks")};
  EXPECT_TRUE(validate(s)) << validate(s).error().to_string();
}

TEST(SpecValidateTest, RejectsRelativeAndUnnormalizedPaths) {
  for (const char* bad : {"usr", "/usr/", "/usr//lib", "/usr/./lib", "/usr/../etc", ""}) {
    JailSpec s;
    s.mounts = {bind_at(bad)};
    const auto r = validate(s);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().where, "mounts[0].target") << bad;
  }
}

TEST(SpecValidateTest, RejectsDuplicateTargetsAndChildrenBeforeParents) {
  JailSpec dup;
  dup.mounts = {bind_at("/usr"), bind_at("/usr")};
  EXPECT_THAT(validate(dup).error().why, HasSubstr("also mounts[0]"));
  JailSpec order;
  order.mounts = {bind_at("/home/u/ws/.git"), bind_at("/home/u/ws")};
  EXPECT_THAT(validate(order).error().why, HasSubstr("parents come before children"));
}

// The git layer's private tmpfs has one place in the setup's scratch root.
TEST(SpecValidateTest, OneGitLayerWithoutASource) {
  Mount git;
  git.kind = Mount::Kind::git;
  git.target = "/home/u/ws/.git";
  JailSpec s;
  s.mounts = {bind_at("/home/u/ws", true), git};
  EXPECT_TRUE(validate(s)) << validate(s).error().to_string();
  Mount other = git;
  other.target = "/home/u/ws/sub/.git";
  s.mounts.push_back(other);
  EXPECT_THAT(validate(s).error().why, HasSubstr("a second git mount"));
  git.source = "/elsewhere";
  s.mounts = {bind_at("/home/u/ws", true), git};
  EXPECT_THAT(validate(s).error().why, HasSubstr("only a bind has a source"));
}

TEST(SpecValidateTest, MaskMayComeAfterTheTreeItMasks) {
  JailSpec s;
  Mount mask;
  mask.kind = Mount::Kind::mask;
  mask.target = "/home/u/ws/.env";
  s.mounts = {bind_at("/home/u/ws", true), mask};
  EXPECT_TRUE(validate(s));
}

TEST(SpecValidateTest, DevicesLieUnderDevOutsideTheMinimalSetOnlyOnTheDevMount) {
  Mount dev;
  dev.kind = Mount::Kind::dev;
  dev.target = "/dev";
  dev.devices = {{"/dev/fuse", false}, {"/dev/net/tun", true}, {"/dev/dri", false}};
  JailSpec ok;
  ok.mounts = {dev};
  EXPECT_TRUE(validate(ok)) << validate(ok).error().to_string();

  const std::pair<const char*, const char*> bad[] = {
      {"/etc/passwd", "not a path under /dev"},
      {"/dev", "is the jail's own"},
      {"/dev/../etc", "not an absolute, normalized path"},
      {"/dev/net/", "not an absolute, normalized path"},
      {"dev/fuse", "not an absolute, normalized path"},
      {"/dev/null", "minimal /dev already (/dev/null)"},
      {"/dev/pts/ptmx", "minimal /dev already (/dev/pts)"},
      {"/dev/shm", "minimal /dev already (/dev/shm)"},
      {"/dev/stdin", "minimal /dev already (/dev/stdin)"},
      {"/dev/fuse", "is also devices[0]"},
  };
  for (const auto& [path, why] : bad) {
    JailSpec s = ok;
    s.mounts[0].devices.push_back({path, false});
    const auto r = validate(s);
    ASSERT_FALSE(r) << path;
    EXPECT_EQ(r.error().where, "mounts[0].devices[3]") << path;
    EXPECT_THAT(r.error().why, HasSubstr(why)) << path;
  }
  // Lookalikes of the minimal names are other devices.
  JailSpec tty0 = ok;
  tty0.mounts[0].devices = {{"/dev/tty0", false}, {"/dev/nullb0", false}};
  EXPECT_TRUE(validate(tty0));

  JailSpec on_bind;
  on_bind.mounts = {bind_at("/usr")};
  on_bind.mounts[0].devices = {{"/dev/fuse", false}};
  EXPECT_EQ(validate(on_bind).error().where, "mounts[0].devices");
}

TEST(SpecValidateTest, ListenersNeedTheJailsOwnNetworkAndDistinctPorts) {
  JailSpec s;
  s.listeners = {{Listener::Protocol::tcp, 3128},
                 {Listener::Protocol::udp, 53},
                 {Listener::Protocol::tcp, 53}};
  EXPECT_TRUE(validate(s));
  JailSpec twice = s;
  twice.listeners.push_back({Listener::Protocol::udp, 53});
  EXPECT_EQ(validate(twice).error().where, "listeners[3]");
  JailSpec zero = s;
  zero.listeners[1].port = 0;
  EXPECT_EQ(validate(zero).error().where, "listeners[1].port");
  JailSpec host = s;
  host.namespaces.net = false;
  host.network = NetworkMode::dangerously_host;
  EXPECT_EQ(validate(host).error().where, "listeners");
  JailSpec many;
  for (std::uint16_t port = 1; port <= kMaxListeners + 1; ++port)
    many.listeners.push_back({Listener::Protocol::tcp, port});
  EXPECT_EQ(validate(many).error().where, "listeners");
}

TEST(SpecValidateTest, AFilterBelongsToAFilteredJailAndHoldsOnlyWhatTheKernelCan) {
  JailSpec s;
  s.network = NetworkMode::filtered;
  s.filter.program = "/usr/libexec/brig/brig-netfilter";
  s.filter.allow = {{{10, 1, 2, 0}, 24, 5432, 5432}};
  s.filter.deny = {{{10, 1, 2, 9}, 32, 1, 65535}};
  s.listeners = {{Listener::Protocol::tcp, 3128}};
  EXPECT_TRUE(validate(s));
  JailSpec relative = s;
  relative.filter.program = "brig-netfilter";
  EXPECT_EQ(validate(relative).error().where, "filter.program");
  JailSpec host_bits = s;
  host_bits.filter.allow[0].address = {10, 1, 2, 5};
  EXPECT_EQ(validate(host_bits).error().where, "filter.allow[0].address");
  JailSpec wide = s;
  wide.filter.deny[0].prefix = 33;
  EXPECT_EQ(validate(wide).error().where, "filter.deny[0].prefix");
  JailSpec ports = s;
  ports.filter.allow[0].first_port = 0;
  EXPECT_EQ(validate(ports).error().where, "filter.allow[0]");
  ports.filter.allow[0] = {{10, 1, 2, 0}, 24, 443, 80};
  EXPECT_EQ(validate(ports).error().where, "filter.allow[0]");
  // A filter with another mode would be believed and not hold.
  JailSpec none = s;
  none.network = NetworkMode::none;
  EXPECT_EQ(validate(none).error().where, "filter");
  JailSpec no_netns = s;
  no_netns.namespaces.net = false;
  EXPECT_EQ(validate(no_netns).error().where, "network");
}

TEST(SpecValidateTest, OnlyAFileMountHasContentAndItIsBounded) {
  JailSpec s;
  Mount f;
  f.kind = Mount::Kind::file;
  f.target = "/etc/resolv.conf";
  f.content = "nameserver 127.0.0.1\n";
  s.mounts = {bind_at("/etc"), f};
  EXPECT_TRUE(validate(s));
  s.mounts[1].content.assign(kMaxFileContent + 1, 'x');
  EXPECT_EQ(validate(s).error().where, "mounts[1].content");
  s.mounts[1].content.clear();
  s.mounts[0].content = "x";
  EXPECT_EQ(validate(s).error().where, "mounts[0].content");
}

TEST(SpecValidateTest, NamespacesMustFitTheNetworkAndMounts) {
  JailSpec net;
  net.namespaces.net = false;
  EXPECT_EQ(validate(net).error().where, "network");
  net.network = NetworkMode::dangerously_host;
  EXPECT_TRUE(validate(net));
  JailSpec mnt;
  mnt.namespaces.mount = false;
  mnt.mounts = {bind_at("/usr")};
  EXPECT_EQ(validate(mnt).error().where, "mounts");
  JailSpec proc;
  proc.namespaces.pid = false;
  Mount p;
  p.kind = Mount::Kind::proc;
  p.target = "/proc";
  proc.mounts = {p};
  EXPECT_THAT(validate(proc).error().why, HasSubstr("pid namespace"));
}

// A tree keeps its owner only as a bind in the jail's user namespace; a
// jail without the launcher's ids mapped is built by its own root.
TEST(SpecValidateTest, KeepOwnerAndAnUnmappedLauncherFitTheIdentity) {
  JailSpec s;
  s.identity = {0, 0, 65534, 65534, /*map_launcher=*/false};
  s.mounts = {bind_at("/home/u/ws", true)};
  s.mounts[0].keep_owner = true;
  EXPECT_TRUE(validate(s)) << validate(s).error().to_string();

  JailSpec tmpfs = s;
  tmpfs.mounts[0].kind = Mount::Kind::tmpfs;
  tmpfs.mounts[0].source.clear();
  EXPECT_EQ(validate(tmpfs).error().where, "mounts[0].keep_owner");
  JailSpec no_userns = s;
  no_userns.namespaces.user = false;
  EXPECT_EQ(validate(no_userns).error().where, "identity");
  no_userns.identity.map_launcher = true;
  EXPECT_EQ(validate(no_userns).error().where, "mounts[0].keep_owner");
  JailSpec not_root = s;
  not_root.identity.inside_uid = 1000;
  EXPECT_EQ(validate(not_root).error().where, "identity");
}

TEST(SpecValidateTest, LimitsMustBeSane) {
  JailSpec s;
  s.limits.pids = 0;
  EXPECT_EQ(validate(s).error().where, "limits.pids");
  s.limits.pids = 10;
  s.limits.memory_bytes = 1000;
  EXPECT_EQ(validate(s).error().where, "limits.memory_bytes");
  s.limits.memory_bytes = 64 << 20;
  s.limits.open_files = 2;
  EXPECT_EQ(validate(s).error().where, "limits.open_files");
  s.limits.open_files = 64;
  s.limits.wall_time = std::chrono::milliseconds(0);
  EXPECT_EQ(validate(s).error().where, "limits.wall_time");
}

TEST(SpecValidateTest, ExecRequestNeedsACommandAndNameValueEnv) {
  ExecRequest r;
  EXPECT_EQ(validate(r).error().where, "argv");
  r.argv = {"true"};
  EXPECT_TRUE(validate(r));
  r.env = {"NOEQUALS"};
  EXPECT_EQ(validate(r).error().where, "env[0]");
  r.env = {"=x"};
  EXPECT_EQ(validate(r).error().where, "env[0]");
  r.env = {"A="};
  r.cwd = "relative";
  EXPECT_EQ(validate(r).error().where, "cwd");
}

}  // namespace
}  // namespace brig::jail
