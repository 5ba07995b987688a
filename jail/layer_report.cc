#include "jail/layer_report.h"

namespace brig::jail {

const char* layer_name(Layer layer) {
  switch (layer) {
    case Layer::namespaces:
      return "namespaces";
    case Layer::landlock:
      return "landlock";
    case Layer::seccomp:
      return "seccomp";
    case Layer::cgroups:
      return "cgroups";
    case Layer::capabilities:
      return "capabilities";
  }
  return "unknown";
}

const char* layer_state_name(LayerState state) {
  switch (state) {
    case LayerState::enforced:
      return "enforced";
    case LayerState::degraded:
      return "degraded";
    case LayerState::off:
      return "off";
  }
  return "unknown";
}

const char* limits_tier_name(LimitsTier tier) {
  switch (tier) {
    case LimitsTier::none:
      return "none";
    case LimitsTier::cgroup_v2:
      return "cgroup v2";
    case LimitsTier::cgroup_v1:
      return "cgroup v1";
    case LimitsTier::rlimits:
      return "rlimits";
  }
  return "unknown";
}

const LayerStatus* LayerReport::find(Layer layer) const {
  for (const auto& l : layers)
    if (l.layer == layer) return &l;
  return nullptr;
}

std::string LayerReport::to_string() const {
  std::string s;
  for (const auto& l : layers) {
    s += layer_name(l.layer);
    s += ": ";
    s += layer_state_name(l.state);
    if (!l.detail.empty()) s += " (" + l.detail + ")";
    s += '\n';
  }
  s += "limits: ";
  s += limits_tier_name(limits_tier);
  s += '\n';
  return s;
}

}  // namespace brig::jail
