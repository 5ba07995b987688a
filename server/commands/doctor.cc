#include "server/commands/doctor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "jail/layer_report.h"
#include "jail/netfilter/availability.h"
#include "jail/steps/idmap.h"
#include "server/commands/workspace.h"
#include "server/llm/secret.h"
#include "server/policy/builtin.h"
#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"
#include "server/policy/writable.h"
#include "server/process/self_exe.h"

namespace brig::commands {
namespace {

using jail::Layer;
using jail::LayerReport;
using jail::LayerState;

constexpr const char* kIdmapFeature = "idmapped_mount";

std::string required_names(const std::vector<Layer>& layers) {
  std::string s;
  for (Layer l : layers) s += (s.empty() ? "" : ", ") + std::string(jail::layer_name(l));
  return s.empty() ? "none" : s;
}

// Whether the policy's jail needs an idmapped workspace (brig as root,
// as_root = "mapped") that the probe found refused: such a jail fails.
bool idmap_refused(const jail::JailSpec& spec, const jail::KernelFeatures& kernel) {
  const jail::Feature* f = kernel.find(kIdmapFeature);
  if (f == nullptr || f->available) return false;
  for (const jail::Mount& m : spec.mounts)
    if (m.keep_owner) return true;
  return false;
}

// A bind source the jail's host uid cannot reach, with why. As root with an
// unprivileged jail root (as_root = "mapped" or "user"), the init builds
// the jail as that uid, and a bind under a directory it cannot search fails
// with EACCES, optional or not (the dev policy's toolchain under a 0700
// /root). Binds inside a tree that keeps its owner are made from the jail's
// side and need no search on the host.
std::optional<std::string> unreachable_bind(const jail::JailSpec& spec) {
  if (::geteuid() != 0 || !spec.namespaces.user || spec.identity.outside_uid == 0)
    return std::nullopt;
  const uid_t uid = spec.identity.outside_uid;
  const gid_t gid = spec.identity.outside_gid;
  for (const jail::Mount& m : spec.mounts) {
    if (m.kind != jail::Mount::Kind::bind || m.keep_owner) continue;
    const bool in_kept = std::any_of(spec.mounts.begin(), spec.mounts.end(), [&](const auto& k) {
      return k.keep_owner && m.source.starts_with(k.source + "/");
    });
    if (in_kept) continue;
    for (size_t slash = m.source.find('/', 1); slash != std::string::npos;
         slash = m.source.find('/', slash + 1)) {
      const std::string dir = m.source.substr(0, slash);
      struct stat st;
      if (::stat(dir.c_str(), &st) != 0) break;  // missing: skipped, or ENOENT as planned
      const mode_t search = st.st_uid == uid ? S_IXUSR : st.st_gid == gid ? S_IXGRP : S_IXOTH;
      if ((st.st_mode & search) == 0)
        return fmt::format("{} cannot be reached: {} is not searchable by the jail's host uid {}",
                           m.source, dir, uid);
    }
  }
  return std::nullopt;
}

// One network mode and whether this host can run it.
struct ModeSupport {
  const char* mode;
  bool available;
  std::string detail;
};

// Whether this brig can run `filtered` here, and if not why: the privilege
// and forwarding it needs, nftables in a new namespace (the probe), and
// brig-netfilter beside brig-server.
ModeSupport filtered_support(const jail::KernelFeatures& kernel) {
  const std::string what =
      "a veth to the host with NAT, under nftables rules in the jail's own namespace: TCP and "
      "UDP to the IPv4 addresses and ports allow names, nothing else; the proxy and DNS stub "
      "too";
  std::string why;
  if (!kernel.namespaces) {
    why = "no network namespace here: see namespaces";
  } else if (auto no = jail::netfilter::filtered_unavailable()) {
    why = *no;
  } else if (auto nft = std::find_if(kernel.features.begin(), kernel.features.end(),
                                     [](const jail::Feature& f) { return f.name == "nftables"; });
             nft != kernel.features.end() && !nft->available) {
    why = "nftables does not work here: " + nft->detail;
  } else if (!process::find_sibling({"brig-netfilter"})) {
    why =
        "brig-netfilter, which loads the host's rules for filtered jails, is not beside "
        "brig-server: reinstall brig";
  }
  if (why.empty()) return {"filtered", true, what};
  return {"filtered", false, what + "; unavailable: " + why};
}

// Every mode a policy can name, as this host runs it. none and proxy need
// nothing beyond the jail's network namespace: proxy's listeners are made
// inside it, by the process that makes it, as the caller.
std::vector<ModeSupport> network_modes(const jail::KernelFeatures& kernel) {
  const std::string ns = kernel.namespaces ? "" : " (no network namespace here: see namespaces)";
  return {
      {"none", kernel.namespaces, "a network namespace of its own with loopback only" + ns},
      {"proxy", kernel.namespaces,
       "loopback only; brig's HTTP proxy (CONNECT too) on the jail's 127.0.0.1:3128 and its DNS "
       "stub on 127.0.0.1:53 are the only way out, deciding by the policy's allow and deny; "
       "needs no privilege" +
           ns},
      filtered_support(kernel),
      {"dangerously_host", true,
       "DANGEROUS: the host's own network, every address and port the host can reach"},
  };
}

// The network a planned jail gets, in a few words.
std::string network_of(const jail::JailSpec& spec) {
  if (spec.network == jail::NetworkMode::dangerously_host)
    return "dangerously_host: the host's network (DANGEROUS)";
  const bool llm = std::find(spec.listeners.begin(), spec.listeners.end(),
                             policy::llm_listener()) != spec.listeners.end();
  const std::string routes = llm ? "; LLM routes through brig's LLM proxy" : "";
  if (spec.network == jail::NetworkMode::filtered)
    return "filtered: a veth under nftables rules, and brig's egress proxy and DNS stub" + routes;
  if (spec.listeners.size() > (llm ? 1u : 0u))
    return "proxy: out only through brig's egress proxy and DNS stub" + routes;
  return "none: loopback only" + routes;
}

nlohmann::json policy_json(const PlannedPolicy& policy, const jail::KernelFeatures& kernel) {
  LayerReport report = jail::predict_layers(policy.second, kernel);
  std::vector<Layer> unmet = jail::unmet_requirements(policy.second, report);
  const bool refused = idmap_refused(policy.second, kernel);
  const auto unreachable = unreachable_bind(policy.second);
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& s : report.layers)
    layers.push_back({{"layer", jail::layer_name(s.layer)},
                      {"state", jail::layer_state_name(s.state)},
                      {"detail", s.detail}});
  nlohmann::json unmet_json = nlohmann::json::array();
  for (Layer l : unmet) unmet_json.push_back(jail::layer_name(l));
  return {{"policy", policy.first},
          {"runs", unmet.empty() && !refused && !unreachable},
          {"idmapped_workspace_refused", refused},
          {"unreachable_bind", unreachable ? nlohmann::json(*unreachable) : nlohmann::json()},
          {"weak_hidden", policy::weak_hidden_paths(policy.second)},
          {"network", network_of(policy.second)},
          {"limits_tier", jail::limits_tier_name(report.limits_tier)},
          {"layers", layers},
          {"unmet_requirements", unmet_json}};
}

std::string text_report(const jail::KernelFeatures& kernel,
                        const std::vector<PlannedPolicy>& policies) {
  std::string out = "Kernel features (probed by trying each one):\n";
  for (const auto& f : kernel.features) {
    out += fmt::format("  {:<24} {:<11} {}\n", f.name, f.available ? "available" : "UNAVAILABLE",
                       f.detail);
    if (!f.remedy.empty()) out += fmt::format("  {:<24} {:<11} remedy: {}\n", "", "", f.remedy);
  }
  out += "\nNetwork modes:\n";
  for (const ModeSupport& m : network_modes(kernel))
    out += fmt::format("  {:<24} {:<11} {}\n", m.mode, m.available ? "available" : "UNAVAILABLE",
                       m.detail);
  for (const auto& policy : policies) {
    LayerReport report = jail::predict_layers(policy.second, kernel);
    std::vector<Layer> unmet = jail::unmet_requirements(policy.second, report);
    std::string verdict = "runs here";
    if (!unmet.empty())
      verdict = "REFUSED here: required layer(s) " + required_names(unmet) + " unavailable";
    else if (idmap_refused(policy.second, kernel))
      verdict = std::string("REFUSED here: the workspace's idmapped mount is refused (") +
                kIdmapFeature + " above)";
    else if (const auto why = unreachable_bind(policy.second))
      verdict = "REFUSED here: " + *why +
                " (as root the jail's root is that unprivileged uid: make the path searchable, "
                "or set [identity] as_root in the policy, policies/README.md)";
    out += fmt::format("\nPolicy {}: {}\n", policy.first, verdict);
    out += fmt::format("  requires: {}\n", required_names(policy.second.required));
    out += fmt::format("  network:  {}\n", network_of(policy.second));
    for (const auto& s : report.layers)
      out += fmt::format("  {:<13} {:<9}{}\n", jail::layer_name(s.layer),
                         jail::layer_state_name(s.state), s.detail.empty() ? "" : " " + s.detail);
    // A mask under a writable bind does not hold when the jail renames a parent.
    for (const std::string& weak : policy::weak_hidden_paths(policy.second))
      out += fmt::format("  {:<13} {:<9} {}: not enforced as a whole\n", "hidden", "weak", weak);
  }
  return out;
}

// The idmapped mount a root brig's default jail makes of the workspace.
jail::Feature idmap_feature(const std::string& workspace, const jail::JailSpec& spec) {
  jail::Feature f{kIdmapFeature, false, "", ""};
  bool kept = false;
  for (const jail::Mount& m : spec.mounts) kept = kept || m.keep_owner;
  if (!kept) {
    f.available = true;
    f.detail = "not needed: the default policy does not map the jail's root (identity.as_root)";
    return f;
  }
  const std::string why =
      jail::idmap::probe(workspace, spec.identity.outside_uid, spec.identity.outside_gid);
  f.available = why.empty();
  if (f.available) {
    f.detail = fmt::format(
        "the workspace {} keeps its owner, shown as the jail's root (host uid {}, gid {})",
        workspace, spec.identity.outside_uid, spec.identity.outside_gid);
  } else {
    f.detail = why;
    f.remedy =
        "a workspace on a filesystem with idmapped mounts (ext4, xfs, btrfs, tmpfs from Linux "
        "6.3), or a policy with identity.as_root = \"user\" (a root-owned workspace is then "
        "read-only) or, knowingly, \"dangerously_host_root\"";
  }
  return f;
}

// The workspace doctor plans with: the current directory when brig would
// accept it implicitly, else the caller's home. Planning only reads paths, so
// a directory `serve` would refuse still shows what the policy does.
std::string planning_workspace(const std::string& cwd, const std::string& home) {
  if (auto ws = resolve_workspace(std::nullopt, cwd, home)) return ws->path;
  return home.empty() ? cwd : home;
}

}  // namespace

int run_doctor(const DoctorOptions& options) {
  char cwd_buf[PATH_MAX];
  if (::getcwd(cwd_buf, sizeof cwd_buf) == nullptr) {
    fmt::print(stderr, "brig doctor: cannot read the current directory: {}\n",
               std::strerror(errno));
    return 1;
  }
  const std::string cwd = cwd_buf;
  policy::EnvMap env = policy::current_environment();
  const std::string home = policy::caller_home(env);
  const std::string workspace = planning_workspace(cwd, home);

  std::vector<PlannedPolicy> planned;
  bool default_plans = false;
  for (const policy::BuiltinPolicy& shipped : policy::builtin_policies()) {
    const std::string name(shipped.name);
    auto loaded = policy::load_policy(name, policy::Expansion{home, env});
    if (!loaded) {
      for (const Error& e : loaded.error())
        fmt::print(stderr, "brig doctor: policy {}: {}\n", name, e.to_string());
      continue;
    }
    const policy::Context ctx = policy::caller_context(workspace, cwd, env, home);
    auto spec = policy::to_jail_spec(loaded->policy, ctx);
    if (!spec) {
      fmt::print(stderr, "brig doctor: policy {}: {}\n", name, spec.error().to_string());
      continue;
    }
    if (name == "default") default_plans = true;
    planned.emplace_back(name, std::move(*spec));
  }

  // --policy: planned like the shipped ones, and its LLM routes listed.
  nlohmann::json routes = nlohmann::json::array();
  std::string routes_text;
  if (!options.policy.empty()) {
    auto loaded = policy::load_policy(options.policy, policy::Expansion{home, env});
    if (!loaded) {
      for (const Error& e : loaded.error())
        fmt::print(stderr, "brig doctor: policy {}: {}\n", options.policy, e.to_string());
      return 1;
    }
    const policy::Context ctx = policy::caller_context(workspace, cwd, env, home);
    auto spec = policy::to_jail_spec(loaded->policy, ctx);
    if (!spec) {
      fmt::print(stderr, "brig doctor: policy {}: {}\n", options.policy, spec.error().to_string());
      return 1;
    }
    planned.emplace_back(options.policy, std::move(*spec));
    if (!loaded->policy.llm.routes.empty())
      routes_text =
          fmt::format("\nLLM routes of {} (keys as brig would read them now):\n", options.policy);
    for (const policy::LlmRoute& r : loaded->policy.llm.routes) {
      const std::string status = llm::key_status(r, env);
      routes.push_back({{"policy", options.policy},
                        {"prefix", r.prefix},
                        {"target", r.target},
                        {"dangerously_skip_verify", r.dangerously_skip_verify},
                        {"key", status}});
      routes_text +=
          fmt::format("  /{:<22} {}{}; key {}\n", r.prefix, r.target,
                      r.dangerously_skip_verify ? " (DANGEROUS: TLS not verified)" : "", status);
    }
  }

  jail::KernelFeatures kernel = jail::probe_kernel_features();
  // As root, the default jail's root is an unprivileged host uid and the
  // workspace keeps its owner through an idmapped mount: tried for real on
  // the workspace (made and dropped), with the default policy's ids.
  if (default_plans && ::geteuid() == 0)
    kernel.features.push_back(idmap_feature(workspace, planned.front().second));
  std::string text = doctor_report(kernel, planned, options.json);
  if (options.json && !options.policy.empty()) {
    auto doc = nlohmann::json::parse(text);
    doc["llm_routes"] = std::move(routes);
    text = doc.dump(2) + "\n";
  } else {
    text += routes_text;
  }
  std::fputs(text.c_str(), stdout);
  if (!default_plans) return 1;
  const auto& def = planned.front();
  const jail::LayerReport report = jail::predict_layers(def.second, kernel);
  return jail::unmet_requirements(def.second, report).empty() &&
                 !idmap_refused(def.second, kernel) && !unreachable_bind(def.second)
             ? 0
             : 1;
}

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "doctor", "Probe what this kernel allows and what each shipped policy will enforce here");
  cmd->add_flag("--json", options.json, "Print the report as JSON");
  cmd->add_option("--policy", options.policy,
                  "Also plan this policy (a shipped name or a TOML file), with its LLM routes and "
                  "whether each route's key is there (never the key)");
  return cmd;
}

std::string doctor_report(const jail::KernelFeatures& kernel,
                          const std::vector<PlannedPolicy>& policies, bool json) {
  if (!json) return text_report(kernel, policies);
  nlohmann::json features = nlohmann::json::array();
  for (const auto& f : kernel.features)
    features.push_back(
        {{"name", f.name}, {"available", f.available}, {"detail", f.detail}, {"remedy", f.remedy}});
  nlohmann::json planned = nlohmann::json::array();
  for (const auto& p : policies) planned.push_back(policy_json(p, kernel));
  nlohmann::json modes = nlohmann::json::array();
  for (const ModeSupport& m : network_modes(kernel))
    modes.push_back({{"mode", m.mode}, {"available", m.available}, {"detail", m.detail}});
  nlohmann::json doc = {{"features", features},
                        {"network_modes", modes},
                        {"landlock_abi", kernel.landlock_abi},
                        {"cgroup_tier", kernel.cgroup_tier},
                        {"policies", planned}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace brig::commands
