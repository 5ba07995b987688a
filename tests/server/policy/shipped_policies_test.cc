// The shipped policies, loaded as brig loads them, planned for fixed callers:
// the whole JailSpec of each, as an unprivileged user and as root.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jail/layer_report.h"
#include "jail/spec_validate.h"
#include "server/policy/builtin.h"
#include "server/policy/loader.h"
#include "server/policy/names.h"
#include "server/policy/to_jail_spec.h"
#include "tests/server/policy/policy_test_util.h"
#include "tests/server/policy/spec_builders.h"

namespace brig::policy {
namespace {

using namespace testing;  // NOLINT: the spec builders
using std::chrono::minutes;
using ::testing::ElementsAre;

// Ada, uid 1000, in a git checkout under her home.
Context ada() {
  Context c;
  c.workspace = "/home/ada/proj";
  c.cwd = "/home/ada/proj";
  c.uid = 1000;
  c.gid = 1000;
  c.home = "/home/ada";
  c.env = {{"HOME", "/home/ada"},
           {"PATH", "/home/ada/bin:/usr/bin"},
           {"TERM", "xterm-256color"},
           {"LANG", "en_US.UTF-8"},
           {"LC_TIME", "en_DK.UTF-8"},
           {"USER", "ada"},
           {"ANTHROPIC_API_KEY", "sk-ant-secret"},
           {"SSH_AUTH_SOCK", "/run/user/1000/ssh"},
           {"RUST_LOG", "debug"}};
  return c;
}

// Root in a container, in a workspace without git.
Context root() {
  Context c;
  c.workspace = "/work/app";
  c.cwd = "/work/app";
  c.uid = 0;
  c.gid = 0;
  c.home = "/root";
  c.env = {{"HOME", "/root"}, {"PATH", "/usr/bin"}, {"TERM", "dumb"}};
  return c;
}

Policy shipped(const char* name, const Context& ctx) {
  Expansion x{ctx.home, ctx.env};
  auto r = load_policy(name, x);
  EXPECT_TRUE(r) << ::testing::PrintToString(testing::messages(r));
  return r ? r->policy : Policy{};
}

jail::JailSpec plan(const char* name, const Context& ctx) {
  auto spec = to_jail_spec(shipped(name, ctx), ctx);
  EXPECT_TRUE(spec) << spec.error().to_string();
  if (!spec) return {};
  EXPECT_TRUE(jail::validate(*spec)) << jail::validate(*spec).error().to_string();
  return *spec;
}

const std::vector<Mount> kRootMasks = {
    mask("/etc/gshadow"),
    mask("/etc/gshadow-"),
    mask("/etc/security/opasswd"),
    mask("/etc/shadow"),
    mask("/etc/shadow-"),
    mask("/etc/ssh/ssh_host_dsa_key"),
    mask("/etc/ssh/ssh_host_ecdsa_key"),
    mask("/etc/ssh/ssh_host_ed25519_key"),
    mask("/etc/ssh/ssh_host_rsa_key"),
    mask("/etc/sudoers"),
    mask("/etc/sudoers.d"),
};

// The workspace of a root brig's default jail: it keeps its owner (an
// idmapped mount), and the jail's root is nobody on the host.
Mount kept(Mount m) {
  m.keep_owner = true;
  return m;
}
const jail::Identity kMappedRoot = {0, 0, 65534, 65534, /*map_launcher=*/false};

// `a` then `b`, then `c`.
// default.toml's `hidden` under `home`: the mount planner masks each where a
// bind shows it (under the private home, nowhere).
std::vector<Mount> home_masks(const std::string& h) {
  std::vector<Mount> m;
  for (const char* p :
       {"/.ssh", "/.gnupg", "/.aws", "/.azure", "/.config/gcloud", "/.kube", "/.docker", "/.netrc",
        "/.git-credentials", "/.npmrc", "/.pypirc", "/.config/gh"})
    m.push_back(mask(h + p));
  return m;
}

// In the planner's order: by path, with '/' lowest, so a tree is depth-first.
std::vector<Mount> in_plan_order(std::vector<Mount> m) {
  std::stable_sort(m.begin(), m.end(), [](const Mount& a, const Mount& b) {
    return std::lexicographical_compare(
        a.target.begin(), a.target.end(), b.target.begin(), b.target.end(),
        [](char x, char y) { return (x == '/' ? '\0' : x) < (y == '/' ? '\0' : y); });
  });
  return m;
}

std::vector<Mount> cat(std::vector<Mount> a, const std::vector<Mount>& b,
                       const std::vector<Mount>& c = {}) {
  a.insert(a.end(), b.begin(), b.end());
  a.insert(a.end(), c.begin(), c.end());
  return a;
}

jail::Limits default_limits() {
  return jail::Limits{.memory_bytes = 4 * kGiB,
                      .pids = 1024,
                      .cpu_seconds = 3600,
                      .file_size_bytes = 8 * kGiB,
                      .open_files = 4096,
                      .wall_time = minutes(60)};
}

TEST(ShippedPolicies, DefaultForAnUnprivilegedUser) {
  jail::JailSpec want;
  want.identity = {1000, 1000, 1000, 1000};
  want.mounts = in_plan_order(
      cat({ro("/bin", true), dev(512 * kMiB), ro("/etc"), tmpfs("/home/ada", 512 * kMiB, 0700),
           rw("/home/ada/proj"), git_layer("/home/ada/proj/.git", 512 * kMiB), ro("/lib", true),
           ro("/lib32", true), ro("/lib64", true), ro("/libx32", true), ro("/opt", true), proc(),
           ro("/sbin", true), tmpfs("/tmp", 512 * kMiB, 01777), ro("/usr")},
          home_masks("/home/ada")));
  want.limits = default_limits();
  want.landlock.read_only = {"/bin",    "/etc", "/lib",  "/lib32", "/lib64",
                             "/libx32", "/opt", "/proc", "/sbin",  "/usr"};
  want.landlock.read_write = {"/dev", "/home/ada", "/home/ada/proj", "/tmp"};
  want.landlock.list_only = {"/"};
  want.landlock.restrict_tcp = false;  // loopback servers: the network namespace is the boundary
  EXPECT_EQ(plan("default", ada()), want);
}

TEST(ShippedPolicies, DefaultForRoot) {
  jail::JailSpec want;
  want.identity = kMappedRoot;
  // No mask for root's secrets: the jail's root is not their owner.
  want.mounts = in_plan_order(
      cat({ro("/bin", true), dev(512 * kMiB), ro("/etc"), ro("/lib", true), ro("/lib32", true),
           ro("/lib64", true), ro("/libx32", true), ro("/opt", true), proc(),
           tmpfs("/root", 512 * kMiB, 0700), ro("/sbin", true), tmpfs("/tmp", 512 * kMiB, 01777),
           ro("/usr"), kept(rw("/work/app")), git_layer("/work/app/.git", 512 * kMiB)},
          home_masks("/root")));
  want.limits = default_limits();
  want.landlock.read_only = {"/bin",    "/etc", "/lib",  "/lib32", "/lib64",
                             "/libx32", "/opt", "/proc", "/sbin",  "/usr"};
  want.landlock.read_write = {"/dev", "/root", "/tmp", "/work/app"};
  want.landlock.list_only = {"/"};
  want.landlock.restrict_tcp = false;
  EXPECT_EQ(plan("default", root()), want);

  // The old behaviour, asked for by name: host root, root's secrets masked.
  Policy host_root = shipped("default", root());
  host_root.identity.as_root = RootIdentity::dangerously_host_root;
  want.identity = {0, 0, 0, 0};
  want.mounts = in_plan_order(
      cat(cat({ro("/bin", true), dev(512 * kMiB), ro("/etc")}, kRootMasks,
              {ro("/lib", true), ro("/lib32", true), ro("/lib64", true), ro("/libx32", true),
               ro("/opt", true), proc(), tmpfs("/root", 512 * kMiB, 0700), ro("/sbin", true),
               tmpfs("/tmp", 512 * kMiB, 01777), ro("/usr"), rw("/work/app"),
               git_layer("/work/app/.git", 512 * kMiB)}),
          home_masks("/root")));
  EXPECT_EQ(to_jail_spec(host_root, root()), want);
}

TEST(ShippedPolicies, DefaultEnvironmentIsTheAllowlistOnly) {
  const Context ctx = ada();
  EXPECT_THAT(without_git_config(jail_environment(shipped("default", ctx), ctx)),
              ElementsAre("HOME=/home/ada", "LANG=en_US.UTF-8", "LC_TIME=en_DK.UTF-8",
                          "PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
                          "TERM=xterm-256color", "TMPDIR=/tmp", "USER=ada"));
}

jail::Limits strict_limits() {
  return jail::Limits{.memory_bytes = 1 * kGiB,
                      .pids = 128,
                      .cpu_seconds = 300,
                      .file_size_bytes = 256 * kMiB,
                      .open_files = 256,
                      .wall_time = minutes(10)};
}

TEST(ShippedPolicies, StrictForAnUnprivilegedUser) {
  jail::JailSpec want;
  want.identity = {1000, 1000, 1000, 1000};
  // A read-only workspace needs no .git protection.
  want.mounts = in_plan_order(
      cat({ro("/bin", true), dev(256 * kMiB), ro("/etc"), tmpfs("/home/ada", 64 * kMiB, 0700),
           ro("/home/ada/proj"), ro("/lib", true), ro("/lib32", true), ro("/lib64", true),
           ro("/libx32", true), ro("/opt", true), proc(), ro("/sbin", true),
           tmpfs("/tmp", 256 * kMiB, 01777), ro("/usr")},
          home_masks("/home/ada")));
  want.limits = strict_limits();
  want.landlock.read_only = {"/bin",    "/etc", "/home/ada/proj", "/lib",  "/lib32", "/lib64",
                             "/libx32", "/opt", "/proc",          "/sbin", "/usr"};
  want.landlock.read_write = {"/dev", "/home/ada", "/tmp"};
  want.landlock.list_only = {"/"};
  want.landlock.restrict_tcp = true;
  EXPECT_EQ(plan("strict", ada()), want);
  EXPECT_THAT(shipped("strict", ada()).disabled_tools, ElementsAre("write_file", "edit_file"));
}

TEST(ShippedPolicies, StrictForRoot) {
  jail::JailSpec want;
  want.identity = kMappedRoot;
  want.mounts = in_plan_order(
      cat({ro("/bin", true), dev(256 * kMiB), ro("/etc"), ro("/lib", true), ro("/lib32", true),
           ro("/lib64", true), ro("/libx32", true), ro("/opt", true), proc(),
           tmpfs("/root", 64 * kMiB, 0700), ro("/sbin", true), tmpfs("/tmp", 256 * kMiB, 01777),
           ro("/usr"), kept(ro("/work/app"))},
          home_masks("/root")));
  want.limits = strict_limits();
  want.landlock.read_only = {"/bin", "/etc",  "/lib",  "/lib32", "/lib64",   "/libx32",
                             "/opt", "/proc", "/sbin", "/usr",   "/work/app"};
  want.landlock.read_write = {"/dev", "/root", "/tmp"};
  want.landlock.list_only = {"/"};
  want.landlock.restrict_tcp = true;
  EXPECT_EQ(plan("strict", root()), want);
}

jail::Limits dev_limits() {
  jail::Limits l = default_limits();
  l.memory_bytes = 8 * kGiB;
  l.pids = 4096;
  l.wall_time = minutes(120);
  return l;
}

// The toolchain binds of dev.toml under `home`, in plan order.
std::vector<Mount> toolchain_mounts(const std::string& h) {
  return {
      rw(h + "/.cache", true),
      ro(h + "/.cargo/bin", true),
      ro(h + "/.cargo/config", true),
      ro(h + "/.cargo/config.toml", true),
      mask(h + "/.cargo/credentials"),
      mask(h + "/.cargo/credentials.toml"),
      ro(h + "/.cargo/env", true),
      rw(h + "/.cargo/git", true),
      rw(h + "/.cargo/registry", true),
      rw(h + "/.gradle/caches", true),
      mask(h + "/.gradle/gradle.properties"),
      ro(h + "/.gradle/init.d", true),
      ro(h + "/.gradle/init.gradle", true),
      ro(h + "/.gradle/init.gradle.kts", true),
      rw(h + "/.gradle/wrapper", true),
      rw(h + "/.m2/repository", true),
      mask(h + "/.m2/settings-security.xml"),
      mask(h + "/.m2/settings.xml"),
      rw(h + "/.npm", true),
      ro(h + "/.rustup", true),
      rw(h + "/.yarn", true),
      ro(h + "/go/bin", true),
      rw(h + "/go/pkg/mod", true),
  };
}

// `base` with the targets of the toolchain binds under `h` that are
// `writable` (or not), sorted as the planner writes Landlock's rules.
std::vector<std::string> with_toolchain(std::vector<std::string> base, const std::string& h,
                                        bool writable) {
  for (const Mount& m : toolchain_mounts(h))
    if (m.kind == Mount::Kind::bind && m.writable == writable) base.push_back(m.target);
  std::sort(base.begin(), base.end());
  return base;
}

// dev's read-only rules: the system's trees and the read-only toolchain binds.
std::vector<std::string> dev_read_only(const std::string& h) {
  return with_toolchain(
      {"/bin", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sbin", "/usr"}, h,
      false);
}

TEST(ShippedPolicies, DevForAnUnprivilegedUser) {
  const std::string h = "/home/ada";
  jail::JailSpec want;
  want.identity = {1000, 1000, 1000, 1000};
  want.mounts = in_plan_order(
      cat(cat({ro("/bin", true), dev(2 * kGiB), ro("/etc"), tmpfs(h, 512 * kMiB, 0700)},
              toolchain_mounts(h),
              {rw(h + "/proj"), git_layer(h + "/proj/.git", 2 * kGiB), ro("/lib", true),
               ro("/lib32", true), ro("/lib64", true), ro("/libx32", true), ro("/opt", true),
               proc(), ro("/sbin", true), tmpfs("/tmp", 2 * kGiB, 01777), ro("/usr")}),
          home_masks(h)));
  want.limits = dev_limits();
  want.landlock.read_only = dev_read_only(h);
  want.landlock.read_write = with_toolchain({"/dev", h, h + "/proj", "/tmp"}, h, true);
  want.landlock.list_only = {"/"};
  want.landlock.restrict_tcp = false;  // loopback servers
  EXPECT_EQ(plan("dev", ada()), want);
}

TEST(ShippedPolicies, DevForRoot) {
  const std::string h = "/root";
  jail::JailSpec want;
  want.identity = kMappedRoot;
  want.mounts =
      in_plan_order(cat(cat({ro("/bin", true), dev(2 * kGiB), ro("/etc"), ro("/lib", true),
                             ro("/lib32", true), ro("/lib64", true), ro("/libx32", true),
                             ro("/opt", true), proc(), tmpfs(h, 512 * kMiB, 0700)},
                            toolchain_mounts(h),
                            {ro("/sbin", true), tmpfs("/tmp", 2 * kGiB, 01777), ro("/usr"),
                             kept(rw("/work/app")), git_layer("/work/app/.git", 2 * kGiB)}),
                        home_masks(h)));
  want.limits = dev_limits();
  want.landlock.read_only = dev_read_only(h);
  want.landlock.read_write = with_toolchain({"/dev", h, "/tmp", "/work/app"}, h, true);
  want.landlock.list_only = {"/"};
  EXPECT_EQ(plan("dev", root()), want);
}

TEST(ShippedPolicies, DevEnvironmentAddsToolchainPathsAndKnobs) {
  const Context ctx = ada();
  EXPECT_THAT(without_git_config(jail_environment(shipped("dev", ctx), ctx)),
              ElementsAre("HOME=/home/ada", "LANG=en_US.UTF-8", "LC_TIME=en_DK.UTF-8",
                          "PATH=/home/ada/.cargo/bin:/home/ada/go/bin:/usr/local/bin:/usr/bin:/bin:"
                          "/usr/local/sbin:/usr/sbin:/sbin",
                          "RUST_LOG=debug", "TERM=xterm-256color", "TMPDIR=/tmp", "USER=ada"));
}

TEST(ShippedPolicies, EveryOneHasADescriptionAndLoads) {
  ASSERT_EQ(builtin_policies().size(), 3u);
  EXPECT_EQ(builtin_policies()[0].name, "default");
  for (const BuiltinPolicy& b : builtin_policies()) {
    const Policy p = shipped(std::string(b.name).c_str(), ada());
    EXPECT_FALSE(p.description.empty()) << b.name;
  }
}

TEST(PolicyNames, LayersAreSpelledAsTheJailSpellsThem) {
  for (size_t i = 0; i < names::kLayers.size(); ++i) {
    EXPECT_EQ(names::kLayers[i], jail::layer_name(static_cast<jail::Layer>(i)));
  }
}

}  // namespace
}  // namespace brig::policy
