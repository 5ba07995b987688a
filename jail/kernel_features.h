// What this kernel really lets brig do, found by trying (in short-lived
// forked children), not by reading sysctls alone: on Ubuntu 24.04 AppArmor
// lets a user namespace be created but strips its capabilities, so only a
// mount or a netlink call inside it tells the truth.
#pragma once

#include <string>
#include <vector>

#include "jail/layer_report.h"
#include "jail/spec.h"

namespace brig::jail {

// One probed feature. `detail` says what was tried and what happened;
// `remedy` (empty when available) says what an operator can do about it.
struct Feature {
  std::string name;  // stable key, e.g. "userns.unprivileged", "landlock"
  bool available = false;
  std::string detail;
  std::string remedy;
};

// The probe results, in a fixed order, plus the facts later steps derive
// from them.
struct KernelFeatures {
  std::vector<Feature> features;
  int landlock_abi = 0;  // 0 = no Landlock
  // Whether an unprivileged user can build a namespaced jail with mounts.
  bool rootless_namespaces = false;
  // Whether the calling user (root or not) can build one.
  bool namespaces = false;
  bool seccomp = false;
  // Whether the git layer's overlay can be mounted (jail/steps/git_state.h).
  bool git_layer = false;
  // "v2", "v1" or "" (none usable by the caller).
  std::string cgroup_tier;

  const Feature* find(const std::string& name) const;
};

// Probes everything. Forks short-lived children; call it only from a
// single-threaded process (brig doctor). Never fails: what could not be
// probed is reported as unavailable with the reason.
KernelFeatures probe_kernel_features();

// What a jail built from `spec` would get on this kernel, layer by layer,
// with the remedy in the detail of each degraded layer. Pure.
LayerReport predict_layers(const JailSpec& spec, const KernelFeatures& kernel);

// The required layers of `spec` that `report` does not enforce: a jail with
// any of these is refused (fail closed).
std::vector<Layer> unmet_requirements(const JailSpec& spec, const LayerReport& report);

}  // namespace brig::jail
