#include "jail/tiers.h"

#include <errno.h>
#include <string.h>

#include <string>
#include <vector>

#include "jail/step_error.h"
#include "jail/steps/clone.h"

namespace brig::jail {
namespace {

constexpr const char* kUsernsRemedy =
    "user namespaces are unavailable to this user: check user.max_user_namespaces, "
    "kernel.unprivileged_userns_clone or the AppArmor userns restriction; brig doctor says which";

bool is_required(const JailSpec& spec, Layer layer) {
  for (Layer l : spec.required)
    if (l == layer) return true;
  return false;
}

// clone3's errnos for "no user namespace for you" (limits, sysctls, LSMs).
bool userns_refused(int err) {
  return err == EPERM || err == ENOSPC || err == EUSERS || err == EACCES;
}

std::string namespaces_not_used(const Namespaces& ns) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on) return;
    if (!s.empty()) s += ", ";
    s += name;
  };
  add(ns.user, "user");
  add(ns.mount, "mount");
  add(ns.pid, "pid");
  add(ns.ipc, "ipc");
  add(ns.uts, "uts");
  add(ns.net, "net");
  add(ns.cgroup, "cgroup");
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}

// What a cgroup without the limit's controller leaves in its place.
std::string rlimits_instead(bool pids_ok, bool memory_ok) {
  std::string instead;
  if (!pids_ok) instead += std::string("RLIMIT_NPROC for pids, ") + kPidsPerUser;
  if (!memory_ok)
    instead +=
        std::string(instead.empty() ? "" : "; ") + "RLIMIT_DATA for memory, " + kMemoryPerProcess;
  return instead;
}

Error no_namespace_tier_refused(int err, const std::string& because) {
  return step_error(SetupStep::clone3, "clone3 with the jail's namespaces",
                    std::string(::strerror(err)) + " (" + kUsernsRemedy + "); " + because, err);
}

// Without a network namespace Landlock's TCP rules are the only network
// boundary, so they are switched to deny-all; without any namespace the
// capabilities to drop are the host's.
Result<void> replan_without_namespaces(const JailSpec& spec, ChildPlan& plan) {
  LandlockRules rules = spec.landlock;
  rules.restrict_tcp = true;
  rules.bind_tcp.clear();
  rules.connect_tcp.clear();
  auto ll = landlock::prepare(rules);
  if (!ll) return std::unexpected(at_step(SetupStep::landlock, std::move(ll.error())));
  plan.landlock = std::move(*ll);
  auto caps = caps::prepare(Namespaces{false, false, false, false, false, false, false});
  if (!caps) return std::unexpected(at_step(SetupStep::caps, std::move(caps.error())));
  plan.caps = std::move(*caps);
  plan.mounts = mounts::no_mounts();
  plan.switch_ids = plan.drop_groups = plan.init_takes_ids = false;
  plan.pid_namespace = false;
  plan.new_netns = false;
  plan.set_hostname = false;
  return {};
}

void report_without_namespaces(const ChildPlan& plan, LayerReport& report, int err) {
  for (auto& l : report.layers) {
    if (l.layer == Layer::namespaces) {
      l.state = LayerState::degraded;
      l.detail = std::string("user namespaces refused (") + ::strerror(err) +
                 "): no mount, pid, network, ipc or uts isolation; files are limited by Landlock "
                 "alone (read-only subtrees and masks inside granted paths are not enforced), the "
                 "network by Landlock's TCP rules alone, and a process that leaves the command's "
                 "process group can outlive the jail";
    }
    if (l.layer == Layer::landlock && !plan.landlock.unenforced.empty()) {
      l.state = LayerState::degraded;
      l.detail = join(plan.landlock.unenforced);
    }
    if (l.layer == Layer::capabilities && !plan.caps.unenforced.empty()) {
      l.state = LayerState::degraded;
      l.detail = join(plan.caps.unenforced);
    }
  }
}

}  // namespace

void report_cgroups(LayerReport& r, const Limits& l, const cgroups::Group& group) {
  LayerStatus entry{Layer::cgroups, LayerState::off, ""};
  r.limits_tier = LimitsTier::none;
  if (l.pids || l.memory_bytes) {
    r.limits_tier = group.tier;
    const bool pids_ok = !l.pids || group.limits_pids;
    const bool memory_ok = !l.memory_bytes || group.limits_memory;
    if (pids_ok && memory_ok) {
      entry.state = LayerState::enforced;
    } else {
      if (group.tier == LimitsTier::none) r.limits_tier = LimitsTier::rlimits;
      entry.state = LayerState::degraded;
      entry.detail = group.detail + " -> " + rlimits_instead(pids_ok, memory_ok);
    }
  }
  for (auto& existing : r.layers)
    if (existing.layer == Layer::cgroups) {
      existing = std::move(entry);
      return;
    }
  r.layers.push_back(std::move(entry));
}

LayerReport report_layers(const JailSpec& spec, const ChildPlan& plan,
                          const cgroups::Group& group) {
  LayerReport r;
  auto add = [&](Layer layer, LayerState state, std::string detail) {
    r.layers.push_back({layer, state, std::move(detail)});
  };
  const std::string host_ns = namespaces_not_used(spec.namespaces);
  const bool any_ns = clone::namespace_flags(spec.namespaces, true) != 0;
  add(Layer::namespaces, any_ns ? LayerState::enforced : LayerState::off,
      host_ns.empty() || !any_ns ? "" : "the host's: " + host_ns);
  const LayerStatus landlock = landlock::layer_status(spec.landlock, plan.landlock);
  add(landlock.layer, landlock.state, landlock.detail);
  add(Layer::seccomp, plan.seccomp.enabled ? LayerState::enforced : LayerState::off, "");
  report_cgroups(r, spec.limits, group);
  add(Layer::capabilities,
      plan.caps.unenforced.empty() ? LayerState::enforced : LayerState::degraded,
      join(plan.caps.unenforced));
  return r;
}

Result<void> check_required(const JailSpec& spec, const LayerReport& report, bool cgroups_made) {
  for (const auto& l : report.layers) {
    if (!is_required(spec, l.layer) || l.state == LayerState::enforced) continue;
    if (l.layer == Layer::cgroups && !cgroups_made) continue;
    return std::unexpected(
        step_error(SetupStep::require, std::string("required layer ") + layer_name(l.layer),
                   std::string(l.state == LayerState::off ? "switched off by the spec"
                                                          : "not enforced: " + l.detail)));
  }
  return {};
}

bool may_fall_back(const JailSpec& spec, int err) {
  return spec.namespaces.user && userns_refused(err) && !is_required(spec, Layer::namespaces);
}

Result<void> fall_back_to_no_namespaces(const JailSpec& spec, ChildPlan& plan, LayerReport& report,
                                        int err) {
  // Without a user namespace, a root launcher's jail would be host root:
  // never, for a spec that maps the jail's root elsewhere.
  if (plan.init_takes_ids)
    return std::unexpected(no_namespace_tier_refused(
        err, "the jail's root maps to host uid " + std::to_string(spec.identity.outside_uid) +
                 ", which needs a user namespace"));
  // Listeners for the egress relay would land on the host's loopback, and
  // the jail would have the host's network: never for a jail whose way out
  // is the relay.
  if (!spec.listeners.empty())
    return std::unexpected(no_namespace_tier_refused(
        err, "the jail's loopback listeners (network mode proxy) need a network namespace"));
  if (spec.network == NetworkMode::filtered)
    return std::unexpected(no_namespace_tier_refused(
        err, "network mode filtered is rules in the jail's own network namespace"));
  // Without a mount namespace the filesystem is limited by Landlock alone:
  // no Landlock or no seccomp leaves nothing meaningful.
  if (plan.landlock.abi == 0 || !plan.seccomp.enabled)
    return std::unexpected(
        no_namespace_tier_refused(err, "without namespaces brig needs both Landlock and seccomp"));
  BRIG_TRY_VOID(replan_without_namespaces(spec, plan));
  report_without_namespaces(plan, report, err);
  return check_required(spec, report, /*cgroups_made=*/false);
}

Error clone_failed(const JailSpec& spec, int err) {
  std::string why = ::strerror(err);
  if (spec.namespaces.user && userns_refused(err)) why += std::string(" (") + kUsernsRemedy + ")";
  return step_error(SetupStep::clone3, "clone3 with the jail's namespaces", why, err);
}

}  // namespace brig::jail
