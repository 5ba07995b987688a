// The planner on hand-made policies: one rule per test. The shipped policies'
// whole plans are in shipped_policies_test.cc.
#include "server/policy/to_jail_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>
#include "jail/spec_validate.h"

#include <algorithm>
#include "tests/server/policy/spec_builders.h"

namespace brig::policy {
namespace {

using namespace testing;  // NOLINT: the spec builders
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// The workspace's .git, through the git layer (docs/jail.md, "git"); its
// private layer may hold as much as /tmp.
Mount git() {
  return git_layer("/home/ada/proj/.git", 16 * kMiB);
}

// A policy with only /usr read-only, and a caller with uid 1000.
class Planner : public ::testing::Test {
 protected:
  Planner() {
    policy.filesystem.read_only = {{"/usr", false}};
    policy.filesystem.tmp_size = 16 * kMiB;
    policy.filesystem.home_size = 8 * kMiB;
    ctx.workspace = "/home/ada/proj";
    ctx.cwd = "/home/ada/proj";
    ctx.uid = 1000;
    ctx.gid = 1001;
    ctx.home = "/home/ada";
  }
  std::vector<Mount> mounts() {
    auto spec = to_jail_spec(policy, ctx);
    EXPECT_TRUE(spec) << spec.error().to_string();
    if (!spec) return {};
    EXPECT_TRUE(jail::validate(*spec)) << jail::validate(*spec).error().to_string();
    return spec->mounts;
  }
  std::string refusal() {
    auto spec = to_jail_spec(policy, ctx);
    return spec ? "planned" : spec.error().to_string();
  }

  Policy policy;
  Context ctx;
};

TEST_F(Planner, BaseLayout) {
  EXPECT_THAT(mounts(),
              ElementsAre(dev(16 * kMiB), tmpfs("/home/ada", 8 * kMiB, 0700), rw("/home/ada/proj"),
                          git(), proc(), tmpfs("/tmp", 16 * kMiB, 01777), ro("/usr")));
}

TEST_F(Planner, RefusesTheRootAsWorkspace) {
  ctx.workspace = "/";
  EXPECT_EQ(refusal(),
            "plan the jail (/): the workspace must be an absolute directory other than /");
  ctx.workspace = "relative";
  EXPECT_EQ(refusal(),
            "plan the jail (relative): the workspace must be an absolute directory other than /");
}

TEST_F(Planner, RefusesAWorkspaceInAHiddenPath) {
  policy.filesystem.hidden = {"/home/ada"};
  EXPECT_EQ(
      refusal(),
      "plan the jail (/home/ada/proj): the workspace lies in \"/home/ada\", which the policy "
      "hides (filesystem.hidden); choose another workspace or a policy that does not hide it");
}

TEST_F(Planner, RefusesPolicyPathsInProcAndDev) {
  policy.filesystem.read_write = {{"/dev/kvm", true}};
  EXPECT_EQ(refusal(),
            "plan the jail (/dev/kvm): /proc and /dev are the jail's own (its pid namespace's "
            "/proc, a minimal /dev); remove this path from the policy (a device goes in "
            "filesystem.dangerously_devices)");
}

TEST_F(Planner, DevicesGoOnTheDevMount) {
  policy.filesystem.dangerously_devices = {{"/dev/fuse", false}, {"/dev/net/tun", true}};
  Mount d = dev(16 * kMiB);
  d.devices = {{"/dev/fuse", false}, {"/dev/net/tun", true}};
  EXPECT_THAT(mounts(), ElementsAre(d, tmpfs("/home/ada", 8 * kMiB, 0700), rw("/home/ada/proj"),
                                    git(), proc(), tmpfs("/tmp", 16 * kMiB, 01777), ro("/usr")));
  // The host's whole /dev is there already; Landlock grants it as before.
  policy.dangerously_share = {SharedNamespace::mount};
  policy.filesystem.private_home = false;
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_THAT(spec->mounts, IsEmpty());
  EXPECT_THAT(spec->landlock.read_write, Contains("/dev"));
}

TEST_F(Planner, WorkspaceWinsOverAPolicyBindAndTheHomeTmpfs) {
  ctx.workspace = "/home/ada";
  policy.filesystem.read_only.push_back({"/home/ada", false});
  EXPECT_THAT(mounts(),
              ElementsAre(dev(16 * kMiB), rw("/home/ada"), git_layer("/home/ada/.git", 16 * kMiB),
                          proc(), tmpfs("/tmp", 16 * kMiB, 01777), ro("/usr")));
}

TEST_F(Planner, ReadOnlyWorkspace) {
  policy.filesystem.workspace = WorkspaceAccess::read_only;
  EXPECT_EQ(mounts()[2], ro("/home/ada/proj"));
}

TEST_F(Planner, ExplicitBindReplacesAPrivateTmpfs) {
  policy.filesystem.read_write = {{"/tmp", false}};
  policy.filesystem.private_home = false;
  EXPECT_THAT(mounts(), ElementsAre(dev(16 * kMiB), rw("/home/ada/proj"), git(), proc(), rw("/tmp"),
                                    ro("/usr")));
}

TEST_F(Planner, BindsInsideTheHomeComeAfterItsTmpfs) {
  policy.filesystem.read_write = {{"/home/ada/.cache", true}};
  EXPECT_THAT(mounts(), ElementsAre(dev(16 * kMiB), tmpfs("/home/ada", 8 * kMiB, 0700),
                                    rw("/home/ada/.cache", true), rw("/home/ada/proj"), git(),
                                    proc(), tmpfs("/tmp", 16 * kMiB, 01777), ro("/usr")));
}

TEST_F(Planner, NoPrivateHomeWithoutAUsableHome) {
  for (const char* home : {"", "/", "relative"}) {
    ctx.home = home;
    EXPECT_THAT(mounts(), ElementsAre(dev(16 * kMiB), rw("/home/ada/proj"), git(), proc(),
                                      tmpfs("/tmp", 16 * kMiB, 01777), ro("/usr")))
        << home;
  }
}

// The mount planner, which sees the host, decides where each one shows (a
// path under brig's own tmpfs shows nowhere; a symlinked one may show at
// another path): the policy planner hands every hidden path on.
TEST_F(Planner, HiddenPathsAreHandedToTheMountPlannerAsMasks) {
  policy.filesystem.hidden = {"/usr/share/secret", "/home/ada/.ssh", "/srv/x",
                              "/home/ada/proj/.env", "/tmp"};
  EXPECT_THAT(
      mounts(),
      ElementsAre(dev(16 * kMiB), tmpfs("/home/ada", 8 * kMiB, 0700), mask("/home/ada/.ssh"),
                  rw("/home/ada/proj"), mask("/home/ada/proj/.env"), git(), proc(), mask("/srv/x"),
                  tmpfs("/tmp", 16 * kMiB, 01777), ro("/usr"), mask("/usr/share/secret")));
}

// The default for a root brig: the jail's root is the unprivileged
// identity.uid on the host, host root is in no map, and the workspace keeps
// its owner (an idmapped tree). Nothing is masked: root's files are not the
// jail's, and /proc's hardening for a host-root jail is not planned.
TEST_F(Planner, RootIsMappedToAnUnprivilegedHostUidByDefault) {
  ctx.uid = 0;
  ctx.gid = 0;
  ctx.home = "/root";
  policy.filesystem.read_only = {{"/etc", false}};
  policy.filesystem.private_home = false;
  ASSERT_EQ(policy.identity.as_root, RootIdentity::mapped);
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec) << spec.error().to_string();
  EXPECT_EQ(spec->identity, (jail::Identity{0, 0, 65534, 65534, /*map_launcher=*/false}));
  Mount ws = rw("/home/ada/proj");
  ws.keep_owner = true;
  EXPECT_THAT(spec->mounts, ElementsAre(dev(16 * kMiB), ro("/etc"), ws, git(), proc(),
                                        tmpfs("/tmp", 16 * kMiB, 01777)));
  EXPECT_TRUE(jail::validate(*spec)) << jail::validate(*spec).error().to_string();

  policy.identity.uid = 4242;
  policy.identity.gid = 4343;
  policy.filesystem.workspace = WorkspaceAccess::read_only;
  spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->identity, (jail::Identity{0, 0, 4242, 4343, false}));
  EXPECT_TRUE(spec->mounts[2].keep_owner);  // read-only, still its owner's
  // A root brig serving another user runs that user as itself.
  ctx.uid = 1000;
  ctx.gid = 1001;
  spec = to_jail_spec(policy, ctx);
  EXPECT_EQ(spec->identity, (jail::Identity{1000, 1001, 1000, 1001}));
  for (const Mount& m : spec->mounts) EXPECT_FALSE(m.keep_owner) << m.target;
}

TEST_F(Planner, RootMappedToHostRootMasksRootSecrets) {
  ctx.uid = 0;
  ctx.gid = 0;
  ctx.home = "/root";
  policy.filesystem.read_only = {{"/etc", false}};
  policy.filesystem.private_home = false;
  policy.identity.as_root = RootIdentity::dangerously_host_root;
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->identity, (jail::Identity{0, 0, 0, 0}));
  EXPECT_THAT(spec->mounts,
              ElementsAre(dev(16 * kMiB), ro("/etc"), mask("/etc/gshadow"), mask("/etc/gshadow-"),
                          mask("/etc/security/opasswd"), mask("/etc/shadow"), mask("/etc/shadow-"),
                          mask("/etc/ssh/ssh_host_dsa_key"), mask("/etc/ssh/ssh_host_ecdsa_key"),
                          mask("/etc/ssh/ssh_host_ed25519_key"), mask("/etc/ssh/ssh_host_rsa_key"),
                          mask("/etc/sudoers"), mask("/etc/sudoers.d"), rw("/home/ada/proj"), git(),
                          proc(), tmpfs("/tmp", 16 * kMiB, 01777)));
  EXPECT_TRUE(jail::validate(*spec));

  policy.identity.dangerously_unmask_root_secrets = true;
  EXPECT_THAT(to_jail_spec(policy, ctx)->mounts,
              ElementsAre(dev(16 * kMiB), ro("/etc"), rw("/home/ada/proj"), git(), proc(),
                          tmpfs("/tmp", 16 * kMiB, 01777)));
}

TEST_F(Planner, RootCanRunTheJailAsAnUnprivilegedUser) {
  ctx.uid = 0;
  ctx.gid = 0;
  policy.filesystem.read_only = {{"/etc", false}};
  policy.identity.as_root = RootIdentity::user;
  policy.identity.uid = 4242;
  policy.identity.gid = 4343;
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->identity, (jail::Identity{4242, 4343, 4242, 4343}));
  // Not root on the host: nothing to mask.
  EXPECT_EQ(std::count_if(spec->mounts.begin(), spec->mounts.end(),
                          [](const Mount& m) { return m.kind == Mount::Kind::mask; }),
            0);
}

TEST_F(Planner, UnprivilegedCallerAlwaysKeepsItsOwnIds) {
  policy.identity.as_root = RootIdentity::user;
  EXPECT_EQ(to_jail_spec(policy, ctx)->identity, (jail::Identity{1000, 1001, 1000, 1001}));
}

// Everything git reads as configuration or as a pointer lives in .git, and
// a jail must not be able to add or change any of it (docs/jail.md, "git").
// Planned for every jail (the mount planner skips it when there is no .git),
// so a repository made after brig started is covered too.
TEST_F(Planner, GitDirectoryGoesThroughTheGitLayer) {
  EXPECT_THAT(mounts(),
              ElementsAre(dev(16 * kMiB), tmpfs("/home/ada", 8 * kMiB, 0700), rw("/home/ada/proj"),
                          git(), proc(), tmpfs("/tmp", 16 * kMiB, 01777), ro("/usr")));
}

// git's housekeeping would write where the layer keeps .git read-only.
TEST_F(Planner, GitHousekeepingIsTurnedOffInTheEnvironment) {
  const auto env = jail_environment(policy, ctx);
  EXPECT_THAT(env, Contains("GIT_CONFIG_COUNT=9"));
  EXPECT_THAT(env, Contains("GIT_CONFIG_KEY_0=gc.writeCommitGraph"));
  EXPECT_THAT(env, Contains("GIT_CONFIG_KEY_3=core.splitIndex"));
  policy.environment.set["GIT_CONFIG_COUNT"] = "1";
  EXPECT_THAT(jail_environment(policy, ctx), Contains("GIT_CONFIG_COUNT=1"));
  policy.environment.set.erase("GIT_CONFIG_COUNT");
  policy.filesystem.dangerously_writable_git = true;
  for (const std::string& e : jail_environment(policy, ctx))
    EXPECT_FALSE(e.starts_with("GIT_CONFIG_")) << e;
}

TEST_F(Planner, GitProtectionOffOnlyWhenAskedOrPointless) {
  policy.filesystem.dangerously_writable_git = true;
  EXPECT_EQ(mounts().size(), 6u);
  policy.filesystem.dangerously_writable_git = false;
  policy.filesystem.workspace = WorkspaceAccess::read_only;
  EXPECT_EQ(mounts().size(), 6u);
}

// The policy's own binds come after .git's at the same path, whatever they say.
TEST_F(Planner, PolicyCannotMakeGitWritableByNamingIt) {
  policy.filesystem.read_write = {{"/home/ada/proj/.git", false}};
  const auto m = mounts();
  EXPECT_NE(std::find(m.begin(), m.end(), git()), m.end());
  EXPECT_EQ(std::find(m.begin(), m.end(), rw("/home/ada/proj/.git")), m.end());
}

// A hidden .git is masked, not shown through the git layer.
TEST_F(Planner, HiddenGitIsMaskedNotLayered) {
  policy.filesystem.hidden = {"/home/ada/proj/.git"};
  const auto m = mounts();
  EXPECT_EQ(std::find(m.begin(), m.end(), git()), m.end());
  EXPECT_NE(std::find(m.begin(), m.end(), mask("/home/ada/proj/.git")), m.end());
}

TEST_F(Planner, LandlockFollowsTheMounts) {
  policy.filesystem.hidden = {"/usr/secret"};
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->landlock.enabled);
  EXPECT_THAT(spec->landlock.read_only, ElementsAre("/proc", "/usr"));
  EXPECT_THAT(spec->landlock.read_write,
              ElementsAre("/dev", "/home/ada", "/home/ada/proj", "/tmp"));
  // The private root's own directories hold only mount points.
  EXPECT_THAT(spec->landlock.list_only, ElementsAre("/"));
  EXPECT_TRUE(spec->landlock.restrict_tcp);
  EXPECT_THAT(spec->landlock.bind_tcp, IsEmpty());
  EXPECT_THAT(spec->landlock.connect_tcp, IsEmpty());
}

TEST_F(Planner, LoopbackServersLiftTheTcpRule) {
  policy.network.loopback_servers = true;
  EXPECT_FALSE(to_jail_spec(policy, ctx)->landlock.restrict_tcp);
}

TEST_F(Planner, HostNetwork) {
  policy.network.mode = NetworkMode::dangerously_host;
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_FALSE(spec->namespaces.net);
  EXPECT_EQ(spec->network, jail::NetworkMode::dangerously_host);
  EXPECT_FALSE(spec->landlock.restrict_tcp);
  EXPECT_TRUE(jail::validate(*spec));
}

TEST_F(Planner, ProxyIsANamespaceOfItsOwnWhoseTcpRuleLetsTheProxyIn) {
  policy.network.mode = NetworkMode::proxy;
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_TRUE(spec->namespaces.net);
  EXPECT_EQ(spec->network, jail::NetworkMode::none);
  EXPECT_TRUE(spec->landlock.restrict_tcp);
  EXPECT_THAT(spec->landlock.bind_tcp, IsEmpty());
  EXPECT_THAT(spec->landlock.connect_tcp, ElementsAre(3128, 53));
  EXPECT_TRUE(jail::validate(*spec));

  policy.network.loopback_servers = true;
  spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_FALSE(spec->landlock.restrict_tcp);
  EXPECT_THAT(spec->landlock.connect_tcp, IsEmpty());
}

TEST_F(Planner, FilteredIsANamespaceWithKernelRulesTheProxyAndTheStub) {
  policy.network.mode = NetworkMode::filtered;
  policy.network.rules.allow = {*parse_net_rule("10.1.2.0/24:5432"),
                                *parse_net_rule("web.test:8080"), *parse_net_rule("*.example.org")};
  policy.network.rules.deny = {*parse_net_rule("10.1.2.9")};
  policy.network.rules.hosts = {{"web.test", *parse_address("10.77.0.2")}};
  // Without brig-netfilter nothing can give the jail its rules: refused.
  auto missing = to_jail_spec(policy, ctx);
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().why, HasSubstr("brig-netfilter"));

  ctx.netfilter_program = "/opt/brig/libexec/brig/brig-netfilter";
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec) << spec.error().to_string();
  EXPECT_TRUE(spec->namespaces.net);
  EXPECT_EQ(spec->network, jail::NetworkMode::filtered);
  EXPECT_EQ(spec->filter.program, "/opt/brig/libexec/brig/brig-netfilter");
  using E = jail::NetFilter::Entry;
  EXPECT_THAT(spec->filter.allow,
              ElementsAre(E{{10, 1, 2, 0}, 24, 5432, 5432}, E{{10, 77, 0, 2}, 32, 8080, 8080}));
  EXPECT_THAT(spec->filter.deny, ElementsAre(E{{10, 1, 2, 9}, 32, 1, 65535}));
  EXPECT_EQ(spec->listeners, egress_listeners());
  EXPECT_THAT(spec->required, Contains(jail::Layer::namespaces));
  // Landlock's TCP rule lets in the proxy, the stub and the allowed ports.
  EXPECT_TRUE(spec->landlock.restrict_tcp);
  EXPECT_THAT(spec->landlock.connect_tcp, ElementsAre(3128, 53, 5432, 8080));
  EXPECT_TRUE(jail::validate(*spec));
  const auto env = jail_environment(policy, ctx);
  EXPECT_THAT(env, Contains("HTTPS_PROXY=http://127.0.0.1:3128"));

  // No other mode carries a filter.
  policy.network.mode = NetworkMode::proxy;
  spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->filter, jail::NetFilter{});
}

TEST_F(Planner, ProxyListensOnTheJailsLoopbackAndNamesItsDnsStub) {
  policy.network.mode = NetworkMode::proxy;
  policy.filesystem.read_only.push_back({"/etc", false});
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  using P = jail::Listener::Protocol;
  EXPECT_THAT(spec->listeners,
              ElementsAre(jail::Listener{P::tcp, kProxyPort}, jail::Listener{P::udp, kDnsPort},
                          jail::Listener{P::tcp, kDnsPort}));
  const auto resolv =
      std::find_if(spec->mounts.begin(), spec->mounts.end(),
                   [](const jail::Mount& m) { return m.target == "/etc/resolv.conf"; });
  ASSERT_NE(resolv, spec->mounts.end());
  EXPECT_EQ(resolv->kind, jail::Mount::Kind::file);
  EXPECT_TRUE(resolv->optional);  // no bind shows the host's: glibc asks 127.0.0.1 anyway
  EXPECT_THAT(resolv->content, HasSubstr("nameserver 127.0.0.1\n"));
  EXPECT_TRUE(jail::validate(*spec));

  // The other modes have neither.
  policy.network.mode = NetworkMode::none;
  spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_THAT(spec->listeners, IsEmpty());
  EXPECT_TRUE(std::none_of(spec->mounts.begin(), spec->mounts.end(),
                           [](const jail::Mount& m) { return m.kind == jail::Mount::Kind::file; }));
}

TEST_F(Planner, ProxyBindsBrigForGitOverSshReadOnlyAndNamesItInGitSshCommand) {
  policy.network.mode = NetworkMode::proxy;
  ctx.connect_program = "/opt/brig/bin/brig";
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  const auto it = std::find_if(spec->mounts.begin(), spec->mounts.end(), [](const jail::Mount& m) {
    return m.target == "/opt/brig/bin/brig";
  });
  ASSERT_NE(it, spec->mounts.end());
  const jail::Mount& self = *it;
  // After every bind: inside whatever tree holds it.
  EXPECT_TRUE(std::none_of(it, spec->mounts.end(), [](const jail::Mount& m) {
    return m.kind == jail::Mount::Kind::bind && m.target != "/opt/brig/bin/brig";
  }));
  EXPECT_EQ(self.kind, jail::Mount::Kind::bind);
  EXPECT_EQ(self.source, "/opt/brig/bin/brig");
  EXPECT_EQ(self.target, "/opt/brig/bin/brig");
  EXPECT_FALSE(self.writable);
  EXPECT_THAT(spec->landlock.read_only, Contains("/opt/brig/bin/brig"));
  EXPECT_TRUE(jail::validate(*spec));
  EXPECT_THAT(jail_environment(policy, ctx),
              Contains("GIT_SSH_COMMAND=ssh -o ProxyCommand='/opt/brig/bin/brig connect %h %p'"));

  // A path a shell would split or expand, or one the policy hides, is
  // neither bound nor named: git over ssh then fails rather than run
  // something else.
  for (const char* path : {"/opt/my brig/brig", "/opt/$(x)/brig", "/opt/b'rig", "relative/brig"}) {
    ctx.connect_program = path;
    spec = to_jail_spec(policy, ctx);
    ASSERT_TRUE(spec);
    EXPECT_TRUE(std::none_of(spec->mounts.begin(), spec->mounts.end(), [&](const jail::Mount& m) {
      return m.source == path;
    })) << path;
    for (const std::string& kv : jail_environment(policy, ctx))
      EXPECT_FALSE(kv.starts_with("GIT_SSH_COMMAND=")) << path;
  }
  ctx.connect_program = "/home/ada/.local/bin/brig";
  policy.filesystem.hidden = {"/home/ada/.local"};
  for (const std::string& kv : jail_environment(policy, ctx))
    EXPECT_FALSE(kv.starts_with("GIT_SSH_COMMAND=")) << kv;

  // Not in the other modes.
  policy.filesystem.hidden.clear();
  ctx.connect_program = "/opt/brig/bin/brig";
  policy.network.mode = NetworkMode::none;
  spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_TRUE(std::none_of(spec->mounts.begin(), spec->mounts.end(),
                           [](const jail::Mount& m) { return m.source == "/opt/brig/bin/brig"; }));
}

TEST_F(Planner, ProxyPointsEveryUsualVariableAtTheProxyUnlessThePolicySetsIt) {
  policy.network.mode = NetworkMode::proxy;
  ctx.env["HTTPS_PROXY"] = "http://corporate.example:8080";  // unreachable from the jail
  policy.environment.pass = {"HTTPS_PROXY"};
  policy.environment.set["npm_config_proxy"] = "http://127.0.0.1:9";
  const std::vector<std::string> env = jail_environment(policy, ctx);
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                           "all_proxy", "PIP_PROXY", "CARGO_HTTP_PROXY", "npm_config_https_proxy"})
    EXPECT_THAT(env, Contains(fmt::format("{}=http://127.0.0.1:3128", name))) << name;
  EXPECT_THAT(env, Contains("NO_PROXY=localhost,127.0.0.1"));
  EXPECT_THAT(env, Contains("no_proxy=localhost,127.0.0.1"));
  EXPECT_THAT(env, Contains("NODE_USE_ENV_PROXY=1"));
  EXPECT_THAT(env, Contains("npm_config_proxy=http://127.0.0.1:9"));

  policy.network.mode = NetworkMode::none;
  EXPECT_THAT(jail_environment(policy, ctx), Not(Contains("NODE_USE_ENV_PROXY=1")));
}

TEST_F(Planner, SharedNamespaces) {
  policy.dangerously_share = {SharedNamespace::pid, SharedNamespace::ipc};
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->namespaces, (jail::Namespaces{.user = true,
                                                .mount = true,
                                                .pid = false,
                                                .ipc = false,
                                                .uts = true,
                                                .net = true,
                                                .cgroup = true}));
  // The host's /proc would show the host's processes: none at all instead.
  EXPECT_EQ(std::count(spec->mounts.begin(), spec->mounts.end(), proc()), 0);
  EXPECT_TRUE(jail::validate(*spec));
}

TEST_F(Planner, SharedMountNamespaceLeavesLandlockAsTheFilesystemBoundary) {
  policy.dangerously_share = {SharedNamespace::mount};
  policy.filesystem.private_home = false;
  policy.filesystem.read_write = {{"/srv/out", false}};
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_THAT(spec->mounts, IsEmpty());
  EXPECT_THAT(spec->landlock.read_only, ElementsAre("/usr", "/proc"));
  EXPECT_THAT(spec->landlock.read_write, ElementsAre("/srv/out", "/home/ada/proj", "/tmp", "/dev"));
  EXPECT_THAT(spec->landlock.list_only, IsEmpty());  // the host's root: nothing to list
  EXPECT_TRUE(jail::validate(*spec));
}

TEST_F(Planner, LayersLimitsAndSeccompComeFromThePolicy) {
  policy.seccomp = false;
  policy.landlock = false;
  policy.require = {jail::Layer::namespaces, jail::Layer::cgroups};
  policy.limits.pids = 9;
  auto spec = to_jail_spec(policy, ctx);
  ASSERT_TRUE(spec);
  EXPECT_FALSE(spec->seccomp.enabled);
  EXPECT_FALSE(spec->landlock.enabled);
  EXPECT_THAT(spec->required, ElementsAre(jail::Layer::namespaces, jail::Layer::cgroups));
  jail::Limits want;
  want.pids = 9;
  EXPECT_EQ(spec->limits, want);
  EXPECT_EQ(spec->hostname, "brig");
}

TEST_F(Planner, EnvironmentIsTheAllowlistPlusFixedValues) {
  ctx.env = {{"TERM", "xterm"},
             {"LC_ALL", "C"},
             {"LC_TIME", "en_DK"},
             {"LCX", "no"},
             {"AWS_SECRET_ACCESS_KEY", "s3cr3t"},
             {"PATH", "/host/bin"},
             {"LANG", "C.UTF-8"}};
  policy.environment.pass = {"TERM", "LC_*", "PATH", "MISSING"};
  policy.environment.set = {{"PATH", "/usr/bin"}, {"HOME", "/home/ada"}};
  EXPECT_THAT(
      without_git_config(jail_environment(policy, ctx)),
      ElementsAre("HOME=/home/ada", "LC_ALL=C", "LC_TIME=en_DK", "PATH=/usr/bin", "TERM=xterm"));
}

TEST_F(Planner, ExecRequestRunsInTheCallersDirectoryWhenInTheWorkspace) {
  ctx.cwd = "/home/ada/proj/src";
  auto req = exec_request(policy, ctx, {"make", "test"});
  EXPECT_EQ(req.cwd, "/home/ada/proj/src");
  EXPECT_THAT(req.argv, ElementsAre("make", "test"));
  EXPECT_EQ(req.stdin_fd, -1);
  ctx.cwd = "/elsewhere";
  EXPECT_EQ(exec_request(policy, ctx, {"true"}).cwd, "/home/ada/proj");
}

}  // namespace
}  // namespace brig::policy
