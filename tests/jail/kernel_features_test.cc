#include "jail/kernel_features.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include "jail/steps/landlock.h"

namespace brig::jail {
namespace {

KernelFeatures full_kernel() {
  KernelFeatures k;
  k.namespaces = k.rootless_namespaces = k.seccomp = true;
  k.landlock_abi = 7;
  k.cgroup_tier = "v1";
  return k;
}

JailSpec limited_spec() {
  JailSpec spec;
  spec.limits.pids = 256;
  spec.limits.memory_bytes = 1ull << 30;
  return spec;
}

LayerState state_of(const LayerReport& r, Layer layer) {
  return r.find(layer)->state;
}

TEST(PredictLayers, FullKernelEnforcesEveryLayerAndMeetsRequirements) {
  JailSpec spec = limited_spec();
  LayerReport report = predict_layers(spec, full_kernel());
  for (const LayerStatus& s : report.layers)
    EXPECT_EQ(s.state, LayerState::enforced) << layer_name(s.layer) << ": " << s.detail;
  EXPECT_EQ(report.limits_tier, LimitsTier::cgroup_v1);
  EXPECT_TRUE(unmet_requirements(spec, report).empty());
}

TEST(PredictLayers, NoUserNamespacesDegradesAndFailsARequiredLayer) {
  KernelFeatures k = full_kernel();
  k.namespaces = false;
  k.features.push_back({"namespaces", false, "as uid 1000: failed at user namespace",
                        "sysctl -w kernel.unprivileged_userns_clone=1"});
  JailSpec spec = limited_spec();
  LayerReport report = predict_layers(spec, k);
  const LayerStatus* ns = report.find(Layer::namespaces);
  EXPECT_EQ(ns->state, LayerState::degraded);
  EXPECT_NE(ns->detail.find("remedy: sysctl -w kernel.unprivileged_userns_clone=1"),
            std::string::npos);
  EXPECT_EQ(unmet_requirements(spec, report), std::vector<Layer>{Layer::namespaces});

  // Best effort: the same kernel is acceptable when namespaces are not required.
  spec.required = {Layer::landlock, Layer::seccomp};
  EXPECT_TRUE(unmet_requirements(spec, report).empty());
}

TEST(PredictLayers, OldLandlockAbiIsEnforcedButSaysWhatItLacks) {
  KernelFeatures k = full_kernel();
  k.landlock_abi = 3;
  JailSpec spec;
  spec.landlock.restrict_tcp = true;
  const LayerReport report = predict_layers(spec, k);
  const LayerStatus* ll = report.find(Layer::landlock);
  EXPECT_EQ(ll->state, LayerState::enforced);
  EXPECT_NE(ll->detail.find("TCP bind/connect rules need ABI 4"), std::string::npos) << ll->detail;
  EXPECT_NE(ll->detail.find("scoping needs ABI 6"), std::string::npos) << ll->detail;
}

// What doctor predicts is what the launcher will report: both are
// landlock::layer_status of the plan for the kernel's ABI, so a policy that
// doctor says runs is not refused by the launcher (Debian 12's 6.1 has ABI 2).
TEST(PredictLayers, LandlockPredictionIsTheLaunchersReportAtEveryAbi) {
  JailSpec spec;
  spec.landlock.restrict_tcp = true;
  spec.landlock.read_only = {"/usr"};
  for (int abi = 1; abi <= 7; ++abi) {
    KernelFeatures k = full_kernel();
    k.landlock_abi = abi;
    const LayerReport report = predict_layers(spec, k);
    const LayerStatus* predicted = report.find(Layer::landlock);
    ASSERT_NE(predicted, nullptr);
    auto planned = landlock::plan(spec.landlock, abi);
    ASSERT_TRUE(planned);
    EXPECT_EQ(*predicted, landlock::layer_status(spec.landlock, *planned)) << "ABI " << abi;
    EXPECT_EQ(predicted->state, LayerState::enforced) << "ABI " << abi;
    EXPECT_TRUE(unmet_requirements(spec, report).empty()) << "ABI " << abi;
  }
}

TEST(PredictLayers, NoCgroupsFallsBackToRlimits) {
  KernelFeatures k = full_kernel();
  k.cgroup_tier = "";
  LayerReport report = predict_layers(limited_spec(), k);
  EXPECT_EQ(state_of(report, Layer::cgroups), LayerState::degraded);
  EXPECT_EQ(report.limits_tier, LimitsTier::rlimits);
}

// An operator reading brig doctor must not take RLIMIT_DATA for a jail's
// memory limit: it caps each process, and a tmpfs counts for none.
TEST(PredictLayers, NoCgroupsSaysTheMemoryLimitIsPerProcessAndHowToGetOne) {
  KernelFeatures k = full_kernel();
  k.cgroup_tier = "";
  const std::string detail = predict_layers(limited_spec(), k).find(Layer::cgroups)->detail;
  EXPECT_NE(detail.find("memory: RLIMIT_DATA, per process, not enforced as a whole"),
            std::string::npos)
      << detail;
  EXPECT_NE(detail.find("pids: per user (RLIMIT_NPROC), not a cgroup"), std::string::npos)
      << detail;
  EXPECT_NE(detail.find("systemd-run --user --scope -p Delegate=yes brig serve"), std::string::npos)
      << detail;
}

TEST(PredictLayers, LayersTheSpecTurnsOffAreOff) {
  JailSpec spec;
  spec.seccomp.enabled = false;
  spec.landlock.enabled = false;
  LayerReport report = predict_layers(spec, full_kernel());
  EXPECT_EQ(state_of(report, Layer::seccomp), LayerState::off);
  EXPECT_EQ(state_of(report, Layer::landlock), LayerState::off);
  EXPECT_EQ(state_of(report, Layer::cgroups), LayerState::off);  // no memory/pids limit
}

// This project's machines have every layer (issue 3: nothing is skipped);
// the probe must find them all, for root and for an unprivileged user alike.
TEST(ProbeKernelFeatures, FindsEveryLayerOnThisProjectsMachines) {
  KernelFeatures k = probe_kernel_features();
  for (const char* name :
       {"namespaces", "namespaces.unprivileged", "landlock", "seccomp", "nftables"}) {
    const Feature* f = k.find(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_TRUE(f->available) << name << ": " << f->detail;
  }
  EXPECT_TRUE(k.rootless_namespaces);
  EXPECT_GE(k.landlock_abi, 1);
  if (getuid() == 0)
    EXPECT_FALSE(k.cgroup_tier.empty()) << "root gets cgroup v2 or the v1 controllers";
  else
    EXPECT_NE(k.cgroup_tier, "v1") << "v1 controllers are root's";
}

}  // namespace
}  // namespace brig::jail
