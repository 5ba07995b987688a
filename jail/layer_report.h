// LayerReport: what the kernel really enforced for one jail, layer by layer.
// Best-effort layers that could not be applied appear here as degraded with
// the reason, so brig can say so (MCP instructions, audit log, brig run -v).
#pragma once

#include <string>
#include <vector>

#include "jail/spec.h"

namespace brig::jail {

enum class LayerState {
  enforced,  // applied as the spec asked
  degraded,  // partly applied, or skipped because the kernel refused it (see detail)
  off,       // the spec did not ask for it
};

// How resource limits were applied (DESIGN.md's tiers).
enum class LimitsTier {
  none,       // the spec sets no memory or pids limit
  cgroup_v2,  // a delegated cgroup v2 subtree
  cgroup_v1,  // the v1 pids and/or memory controllers (as root on a hybrid host)
  rlimits,    // RLIMIT_NPROC / RLIMIT_DATA only (no usable cgroup)
};

// What a memory limit without a memory cgroup is: RLIMIT_DATA caps each
// process on its own, so a jail of many processes (or one filling a tmpfs,
// which no rlimit counts) can hold far more than the limit. Said in these
// words wherever brig states its limits (MCP instructions, brig doctor, the
// audit log, brig run -v).
inline constexpr const char* kMemoryPerProcess = "per process, not enforced as a whole";
// The same for pids without a pids cgroup: RLIMIT_NPROC counts the
// processes of the jail's user (in the jail's user namespace), not a group.
inline constexpr const char* kPidsPerUser = "per user (RLIMIT_NPROC), not a cgroup";

// How a spec's memory and pids limits hold on this host, as found by making
// (and removing) the cgroups a jail would get (cgroups::probe).
struct LimitsEnforcement {
  LimitsTier tier = LimitsTier::rlimits;
  bool memory_whole = false;  // a memory cgroup caps the jail as a whole
  bool pids_whole = false;    // a pids cgroup counts the jail as a whole
  std::string detail;         // why a cgroup was not used; empty when one was
  friend bool operator==(const LimitsEnforcement&, const LimitsEnforcement&) = default;
};

// One layer's state; detail is empty when enforced exactly as asked.
struct LayerStatus {
  Layer layer = Layer::namespaces;
  LayerState state = LayerState::off;
  std::string detail;
  friend bool operator==(const LayerStatus&, const LayerStatus&) = default;
};

// Every Layer once, in the enum's order.
struct LayerReport {
  std::vector<LayerStatus> layers;
  LimitsTier limits_tier = LimitsTier::none;

  // The entry for `layer`; nullptr if absent (never, for a launcher's report).
  const LayerStatus* find(Layer layer) const;
  // One line per layer: "landlock: enforced", "cgroups: degraded (…)".
  std::string to_string() const;
  friend bool operator==(const LayerReport&, const LayerReport&) = default;
};

// Stable lower-case names, as the policy's `require` spells them.
const char* layer_name(Layer layer);
const char* layer_state_name(LayerState state);
const char* limits_tier_name(LimitsTier tier);

}  // namespace brig::jail
