#include "server/commands/doctor.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "jail/layer_report.h"
#include "server/policy/builtin.h"
#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"
#include "server/policy/writable.h"
#include "server/workspace.h"

namespace brig::server {
namespace {

using jail::Layer;
using jail::LayerReport;
using jail::LayerState;

std::string required_names(const std::vector<Layer>& layers) {
  std::string s;
  for (Layer l : layers) s += (s.empty() ? "" : ", ") + std::string(jail::layer_name(l));
  return s.empty() ? "none" : s;
}

nlohmann::json policy_json(const PlannedPolicy& policy, const jail::KernelFeatures& kernel) {
  LayerReport report = jail::predict_layers(policy.second, kernel);
  std::vector<Layer> unmet = jail::unmet_requirements(policy.second, report);
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& s : report.layers)
    layers.push_back({{"layer", jail::layer_name(s.layer)},
                      {"state", jail::layer_state_name(s.state)},
                      {"detail", s.detail}});
  nlohmann::json unmet_json = nlohmann::json::array();
  for (Layer l : unmet) unmet_json.push_back(jail::layer_name(l));
  return {{"policy", policy.first},
          {"runs", unmet.empty()},
          {"weak_hidden", policy::weak_hidden_paths(policy.second)},
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
  for (const auto& policy : policies) {
    LayerReport report = jail::predict_layers(policy.second, kernel);
    std::vector<Layer> unmet = jail::unmet_requirements(policy.second, report);
    out += fmt::format("\nPolicy {}: {}\n", policy.first,
                       unmet.empty() ? "runs here"
                                     : "REFUSED here: required layer(s) " + required_names(unmet) +
                                           " unavailable");
    out += fmt::format("  requires: {}\n", required_names(policy.second.required));
    for (const auto& s : report.layers)
      out += fmt::format("  {:<13} {:<9}{}\n", jail::layer_name(s.layer),
                         jail::layer_state_name(s.state), s.detail.empty() ? "" : " " + s.detail);
    // A mask under a writable bind does not hold when the jail renames a parent.
    for (const std::string& weak : policy::weak_hidden_paths(policy.second))
      out += fmt::format("  {:<13} {:<9} {}: not enforced as a whole\n", "hidden", "weak", weak);
  }
  return out;
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

  const jail::KernelFeatures kernel = jail::probe_kernel_features();
  std::fputs(doctor_report(kernel, planned, options.json).c_str(), stdout);
  if (!default_plans) return 1;
  const auto& def = planned.front();
  const jail::LayerReport report = jail::predict_layers(def.second, kernel);
  return jail::unmet_requirements(def.second, report).empty() ? 0 : 1;
}

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "doctor", "Probe what this kernel allows and what each shipped policy will enforce here");
  cmd->add_flag("--json", options.json, "Print the report as JSON");
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
  nlohmann::json doc = {{"features", features},
                        {"landlock_abi", kernel.landlock_abi},
                        {"cgroup_tier", kernel.cgroup_tier},
                        {"policies", planned}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace brig::server
