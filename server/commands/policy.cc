#include "server/commands/policy.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "server/llm/secret.h"
#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/names.h"
#include "server/policy/render.h"
#include "server/policy/to_jail_spec.h"
#include "server/policy/units.h"
#include "server/policy/writable.h"

namespace brig::commands {
namespace {

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? std::string(sep) : "") + items[i];
  return out;
}

// A few lines on what the policy allows, for `check`.
std::string summary(const policy::LoadedPolicy& loaded) {
  using namespace policy;
  const Policy& p = loaded.policy;
  std::vector<std::string> limits;
  if (p.limits.memory_bytes) limits.push_back("memory " + format_size(*p.limits.memory_bytes));
  if (p.limits.pids) limits.push_back(fmt::format("pids {}", *p.limits.pids));
  if (p.limits.cpu_seconds)
    limits.push_back("cpu " + format_duration(std::chrono::seconds(*p.limits.cpu_seconds)));
  if (p.limits.wall_time) limits.push_back("wall " + format_duration(*p.limits.wall_time));
  std::vector<std::string> layers;
  for (jail::Layer l : p.require) layers.emplace_back(names::of(l, names::kLayers));
  std::vector<std::string> chain(loaded.chain.begin() + 1, loaded.chain.end());

  std::string out = fmt::format("ok: {}\n", loaded.chain.front());
  if (!chain.empty()) out += fmt::format("  extends    {}\n", join(chain, " -> "));
  if (!p.description.empty()) out += fmt::format("  about      {}\n", p.description);
  out += fmt::format(
      "  files      workspace {}; other paths: {} read-only, {} read-write, {} hidden\n",
      names::of(p.filesystem.workspace, names::kWorkspaceAccess), p.filesystem.read_only.size(),
      p.filesystem.read_write.size(), p.filesystem.hidden.size());
  // A risky opt-in: named, not counted.
  if (!p.filesystem.dangerously_devices.empty()) {
    std::vector<std::string> devices;
    for (const auto& d : p.filesystem.dangerously_devices)
      devices.push_back(d.optional ? d.path + " (if present)" : d.path);
    out += fmt::format("  devices    {} (dangerously_devices)\n", join(devices, ", "));
  }
  const NetRules& rules = p.network.rules;
  out += fmt::format("  network    {}{}{}\n", names::of(p.network.mode, names::kNetworkModes),
                     p.network.mode == NetworkMode::proxy
                         ? fmt::format(": {} allowed, {} denied, {} static hosts",
                                       rules.allow.size(), rules.deny.size(), rules.hosts.size())
                     : p.network.mode == NetworkMode::dangerously_host
                         ? " (DANGEROUS: the host's whole network, no rule applies)"
                         : "",
                     p.network.mode != NetworkMode::dangerously_host && p.network.loopback_servers
                         ? " (TCP on the jail's own loopback allowed)"
                         : "");
  // A mask under a writable bind cannot hold: say so next to what it claims.
  for (const std::string& h : p.filesystem.hidden)
    for (const PathRule& r : p.filesystem.read_write)
      if (h != r.path && is_within(h, r.path)) {
        out += fmt::format(
            "  weak       hidden {} lies under the writable {}: a file the host writes or "
            "replaces there later is not hidden (docs/jail.md)\n",
            h, r.path);
        break;
      }
  out += fmt::format("  limits     {}\n", limits.empty() ? "none" : join(limits, ", "));
  out += fmt::format("  requires   {}\n",
                     layers.empty() ? "nothing (all best effort)" : join(layers, ", "));
  return out;
}

// The hidden paths that would not hold with this directory as the
// workspace (it is writable in most policies, and as root it keeps its
// owner), as the jail is really planned: symlinks resolved, the workspace
// included. Empty when the directory is no workspace (the root, a hidden
// path).
std::string weak_for_here(const policy::LoadedPolicy& loaded, const policy::EnvMap& env,
                          const std::string& home) {
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return "";
  const policy::Context ctx = policy::caller_context(cwd, cwd, env, home);
  auto spec = policy::to_jail_spec(loaded.policy, ctx);
  if (!spec) return "";
  std::string out;
  for (const std::string& weak : policy::weak_hidden_paths(*spec))
    out += fmt::format(
        "  weak       hidden {}, with {} as the workspace: not enforced as a whole "
        "(docs/jail.md, hidden)\n",
        weak, cwd);
  return out;
}

}  // namespace

CLI::App* add_policy_command(CLI::App& app, PolicyOptions& o) {
  CLI::App* cmd = app.add_subcommand("policy", "Check a policy, or print it fully resolved");
  cmd->require_subcommand(1);
  CLI::App* check = cmd->add_subcommand(
      "check", "Validate a policy: every error with file:line:col and what to write instead");
  check->add_option("policy", o.policy, "A shipped policy's name or a TOML file")->required();
  check->callback([&o] { o.action = PolicyOptions::Action::check; });
  CLI::App* show = cmd->add_subcommand(
      "show", "Print a policy fully resolved (after extends, ~ and $VAR) as TOML");
  show->add_option("policy", o.policy, "A shipped policy's name or a TOML file")->required();
  show->callback([&o] { o.action = PolicyOptions::Action::show; });
  return cmd;
}

int run_policy_command(const PolicyOptions& o) {
  const policy::EnvMap env = policy::current_environment();
  const std::string home = policy::caller_home(env);
  auto loaded = policy::load_policy(o.policy, policy::Expansion{home, env});
  if (!loaded) {
    for (const Error& e : loaded.error()) {
      if (e.what == "invalid policy") {
        fmt::print(stderr, "{}: error: {}\n", e.where, e.why);
      } else {
        fmt::print(stderr, "brig policy: {}\n", e.to_string());
      }
    }
    const auto n = std::count_if(loaded.error().begin(), loaded.error().end(),
                                 [](const Error& e) { return e.what == "invalid policy"; });
    if (n > 0) {
      fmt::print(stderr, "brig policy: {} is not valid ({} error{})\n", o.policy, n,
                 n == 1 ? "" : "s");
    }
    return 1;
  }
  if (o.action == PolicyOptions::Action::show) {
    std::fputs(policy::render_policy(loaded->policy, loaded->chain).c_str(), stdout);
    // Comments, so the output still loads: whether each key is there now.
    if (!loaded->policy.llm.routes.empty()) {
      std::fputs("\n# LLM route keys, as brig would read them now (never shown):\n", stdout);
      for (const policy::LlmRoute& r : loaded->policy.llm.routes)
        fmt::print("#   {}: {}\n", r.prefix, llm::key_status(r, env));
    }
  } else {
    std::fputs(summary(*loaded).c_str(), stdout);
    for (const policy::LlmRoute& r : loaded->policy.llm.routes)
      fmt::print("  llm        /{} -> {}{}; key {}\n", r.prefix, r.target,
                 r.dangerously_skip_verify ? " (DANGEROUS: TLS not verified)" : "",
                 llm::key_status(r, env));
    std::fputs(weak_for_here(*loaded, env, home).c_str(), stdout);
  }
  return 0;
}

}  // namespace brig::commands
