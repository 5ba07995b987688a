// `brig doctor`: probes this kernel for real and plans every shipped policy.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "jail/kernel_features.h"
#include "server/commands/doctor.h"
#include "tests/server/test_support.h"

namespace brig::server::testing {
namespace {

struct DoctorRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

DoctorRun doctor(std::vector<std::string> extra) {
  std::vector<std::string> args = {sibling_binary("brig"), "doctor"};
  args.insert(args.end(), extra.begin(), extra.end());
  Child child(args);
  DoctorRun r;
  r.out = child.read_stdout();
  r.err = child.read_stderr();
  const auto status = child.wait();
  if (status && WIFEXITED(*status)) r.exit_code = WEXITSTATUS(*status);
  return r;
}

// Every layer exists on this project's machines (issue 3), so the report
// must find them, and the default policy must run: a probe that wrongly
// reports a layer missing fails here.
TEST(BrigDoctor, JsonReportFindsEveryLayerAndPlansEveryShippedPolicy) {
  const DoctorRun r = doctor({"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = Json::parse(r.out);

  std::map<std::string, bool> available;
  for (const Json& f : doc.at("features")) available[f.at("name")] = f.at("available");
  ASSERT_FALSE(available.empty());
  for (const auto& [name, ok] : available) {
    if (name.find("namespace") != std::string::npos || name == "seccomp") {
      EXPECT_TRUE(ok) << name << " reported unavailable: " << r.out;
    }
  }
  EXPECT_GE(doc.at("landlock_abi").get<int>(), 1);
  // Root gets cgroups (v2 delegated or the v1 controllers); an unprivileged
  // user on this project's v1/v2 hybrid hosts gets no cgroup, never v1.
  const std::string tier = doc.at("cgroup_tier").get<std::string>();
  if (::getuid() == 0)
    EXPECT_NE(tier, "") << r.out;
  else
    EXPECT_NE(tier, "v1") << r.out;

  // As root, the default jail's idmapped workspace is tried for real (this
  // project's machines have it); unprivileged, none is needed: no line.
  if (::geteuid() == 0) {
    ASSERT_TRUE(available.count("idmapped_mount")) << r.out;
    EXPECT_TRUE(available["idmapped_mount"]) << r.out;
  } else {
    EXPECT_FALSE(available.count("idmapped_mount")) << r.out;
  }

  std::vector<std::string> names;
  for (const Json& p : doc.at("policies")) {
    names.push_back(p.at("policy"));
    // As root, dev's toolchain binds under a 0700 home are out of reach of
    // the jail's unprivileged host uid, and the report says so.
    if (::geteuid() == 0 && p.at("policy") == "dev" && !p.at("runs").get<bool>())
      EXPECT_TRUE(p.at("unreachable_bind").is_string()) << p.dump();
    else
      EXPECT_TRUE(p.at("runs").get<bool>()) << p.dump();
    EXPECT_TRUE(p.at("unmet_requirements").empty()) << p.dump();
    bool seccomp_enforced = false;
    for (const Json& l : p.at("layers"))
      if (l.at("layer") == "seccomp") seccomp_enforced = l.at("state") == "enforced";
    EXPECT_TRUE(seccomp_enforced) << p.dump();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"default", "strict", "dev"}));
}

TEST(BrigDoctor, TextReportSaysWhatRunsHere) {
  const DoctorRun r = doctor({});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Kernel features"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Policy default: runs here"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Policy strict:"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

// The report for a host without usable cgroups (injected: this machine has
// them as root): the memory limit is called per process, with the remedy.
TEST(BrigDoctor, WithoutCgroupsTheReportSaysTheMemoryLimitIsPerProcess) {
  jail::KernelFeatures kernel;
  kernel.namespaces = kernel.rootless_namespaces = kernel.seccomp = true;
  kernel.landlock_abi = 7;
  kernel.cgroup_tier = "";
  jail::JailSpec spec;
  spec.limits.memory_bytes = std::uint64_t{4} << 30;
  spec.limits.pids = 512;
  const std::vector<commands::PlannedPolicy> policies = {{"default", spec}};
  const std::string text = commands::doctor_report(kernel, policies, /*json=*/false);
  EXPECT_NE(text.find("cgroups       degraded"), std::string::npos) << text;
  EXPECT_NE(text.find("per process, not enforced as a whole"), std::string::npos) << text;
  EXPECT_NE(text.find("systemd-run --user --scope -p Delegate=yes"), std::string::npos) << text;
  const Json doc = Json::parse(commands::doctor_report(kernel, policies, /*json=*/true));
  EXPECT_EQ(doc.at("policies").at(0).at("limits_tier"), "rlimits");
}

// A hidden path under a writable bind cannot hold (a jail can rename its
// parent): the report names it, in text and JSON; a hidden path elsewhere is
// not named.
TEST(BrigDoctor, HiddenPathsUnderAWritableBindAreNamedAsWeak) {
  jail::KernelFeatures kernel;
  kernel.namespaces = kernel.rootless_namespaces = kernel.seccomp = true;
  kernel.landlock_abi = 7;
  jail::JailSpec spec;
  jail::Mount ws;
  ws.kind = jail::Mount::Kind::bind;
  ws.source = ws.target = "/home/ada/proj";
  ws.writable = true;
  jail::Mount usr = ws;
  usr.source = usr.target = "/usr";
  usr.writable = false;
  jail::Mount env;
  env.kind = jail::Mount::Kind::mask;
  env.target = "/home/ada/proj/.env";
  jail::Mount secret = env;
  secret.target = "/usr/secret";
  spec.mounts = {ws, env, usr, secret};
  std::vector<commands::PlannedPolicy> policies = {{"mine", spec}};
  const std::string text = commands::doctor_report(kernel, policies, /*json=*/false);
  EXPECT_NE(text.find("/home/ada/proj/.env (under the writable /home/ada/proj): not enforced"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("/usr/secret"), std::string::npos) << text;
  const Json doc = Json::parse(commands::doctor_report(kernel, policies, /*json=*/true));
  EXPECT_EQ(doc.at("policies").at(0).at("weak_hidden").size(), 1u) << doc.dump();

  // A read-only workspace that keeps its owner (as root) is attached whole:
  // no snapshot holds its hidden paths either.
  spec.mounts[0].writable = false;
  spec.mounts[0].keep_owner = true;
  const std::string kept = commands::doctor_report(kernel, policies = {{"mine", spec}}, false);
  EXPECT_NE(kept.find("/home/ada/proj/.env (in /home/ada/proj, which keeps its owner"),
            std::string::npos)
      << kept;
}

// A root brig's mapped jail needs the idmapped workspace: where the probe
// found it refused, the policy is refused, saying why, and the others run.
TEST(BrigDoctor, RefusedIdmappedMountRefusesThePoliciesThatNeedIt) {
  jail::KernelFeatures kernel;
  kernel.namespaces = kernel.rootless_namespaces = kernel.seccomp = true;
  kernel.landlock_abi = 7;
  kernel.features.push_back({"idmapped_mount", false, "ramfs does not support idmapped mounts",
                             "identity.as_root = \"user\""});
  jail::JailSpec mapped;
  jail::Mount ws;
  ws.kind = jail::Mount::Kind::bind;
  ws.source = ws.target = "/work/app";
  ws.writable = true;
  ws.keep_owner = true;
  mapped.mounts = {ws};
  jail::JailSpec user = mapped;
  user.mounts[0].keep_owner = false;
  const std::vector<commands::PlannedPolicy> policies = {{"mapped", mapped}, {"user", user}};
  const std::string text = commands::doctor_report(kernel, policies, /*json=*/false);
  EXPECT_NE(text.find("Policy mapped: REFUSED here: the workspace's idmapped mount is refused"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Policy user: runs here"), std::string::npos) << text;
  EXPECT_NE(text.find("remedy: identity.as_root"), std::string::npos) << text;
  const Json doc = Json::parse(commands::doctor_report(kernel, policies, /*json=*/true));
  EXPECT_FALSE(doc.at("policies").at(0).at("runs").get<bool>());
  EXPECT_TRUE(doc.at("policies").at(0).at("idmapped_workspace_refused").get<bool>());
  EXPECT_TRUE(doc.at("policies").at(1).at("runs").get<bool>());
}

// As root with an unprivileged jail root, a bind under a directory that uid
// cannot search fails at mount: the report says so before a run does.
TEST(BrigDoctor, ABindTheJailsHostUidCannotReachIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only a root brig runs its jail as another uid";
  TempDir closed;
  ASSERT_EQ(::chmod(closed.path().c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((closed.path() + "/tools").c_str(), 0755), 0);
  jail::KernelFeatures kernel;
  kernel.namespaces = kernel.rootless_namespaces = kernel.seccomp = true;
  kernel.landlock_abi = 7;
  jail::JailSpec spec;
  spec.identity = {0, 0, 65534, 65534};
  jail::Mount tools;
  tools.kind = jail::Mount::Kind::bind;
  tools.source = tools.target = closed.path() + "/tools";
  tools.optional = true;
  spec.mounts = {tools};
  const std::vector<commands::PlannedPolicy> policies = {{"mine", spec}};
  const std::string text = commands::doctor_report(kernel, policies, /*json=*/false);
  EXPECT_NE(text.find("REFUSED here: " + closed.path() + "/tools cannot be reached: " +
                      closed.path() + " is not searchable by the jail's host uid 65534"),
            std::string::npos)
      << text;
  const Json doc = Json::parse(commands::doctor_report(kernel, policies, /*json=*/true));
  EXPECT_EQ(doc.at("policies").at(0).at("runs"), false) << doc.dump();
  ASSERT_EQ(::chmod(closed.path().c_str(), 0711), 0);
  EXPECT_EQ(commands::doctor_report(kernel, policies, false).find("REFUSED"), std::string::npos);
}

// --policy: one more policy planned, with its LLM routes and whether each
// key is there; never the key.
TEST(BrigDoctor, APolicysLlmRoutesAndTheirKeys) {
  TempDir dir;
  std::ofstream(dir.file("llm.toml")) << R"([[llm.routes]]
provider = "anthropic"
key_env = "BRIG_TEST_DOCTOR_KEY"
[[llm.routes]]
provider = "openai"
key_env = "BRIG_TEST_DOCTOR_ABSENT"
)";
  const std::string key = "sk-test-doctor-5d1e";
  ::setenv("BRIG_TEST_DOCTOR_KEY", key.c_str(), 1);
  ::unsetenv("BRIG_TEST_DOCTOR_ABSENT");
  const DoctorRun text = doctor({"--policy", dir.file("llm.toml")});
  const DoctorRun json = doctor({"--json", "--policy", dir.file("llm.toml")});
  ::unsetenv("BRIG_TEST_DOCTOR_KEY");
  EXPECT_NE(text.out.find("LLM routes of " + dir.file("llm.toml")), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("https://api.anthropic.com; key present (BRIG_TEST_DOCTOR_KEY)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("key MISSING: BRIG_TEST_DOCTOR_ABSENT is not set"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("LLM routes through brig's LLM proxy"), std::string::npos) << text.out;
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j.at("llm_routes").size(), 2u) << json.out;
  EXPECT_EQ(j.at("llm_routes")[0].at("prefix"), "anthropic");
  EXPECT_EQ(j.at("llm_routes")[0].at("key"), "present (BRIG_TEST_DOCTOR_KEY)");
  for (const DoctorRun* r : {&text, &json})
    EXPECT_EQ((r->out + r->err).find(key), std::string::npos);
}

}  // namespace
}  // namespace brig::server::testing
