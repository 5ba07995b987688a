#include "server/sandbox/sandbox.h"

#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "server/egress/pins.h"
#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"
#include "server/policy/units.h"
#include "server/policy/writable.h"
#include "server/process/self_exe.h"

namespace brig::sandbox {

namespace {

// account: whose ids the jail's command takes on the host; brig's own when empty.
Result<Sandbox> plan(const std::string& policy_ref, const std::string& workspace,
                     const std::string& cwd, policy::EnvMap env, const std::string& home,
                     const std::optional<Account>& account) {
  auto loaded = policy::load_policy(policy_ref, policy::Expansion{home, env});
  if (!loaded) {
    std::string why;
    for (const Error& e : loaded.error()) {
      if (!why.empty()) why += '\n';
      why += e.what == "invalid policy" ? e.where + ": " + e.why : e.to_string();
    }
    return std::unexpected(Error{"load policy", policy_ref, std::move(why)});
  }
  Sandbox sandbox;
  sandbox.policy = std::move(loaded->policy);
  sandbox.policy_name = policy_ref;
  sandbox.context = policy::caller_context(workspace, cwd, std::move(env), home);
  if (account) {
    sandbox.context.uid = account->uid;
    sandbox.context.gid = account->gid;
  }
  // `brig connect` for a proxy jail's git over ssh: the front end beside
  // brig-server (bin/ of the build tree, ../../bin from libexec/brig).
  if (sandbox.policy.network.mode == policy::NetworkMode::proxy)
    if (auto brig = process::find_sibling({"brig", "../../bin/brig"}))
      sandbox.context.connect_program = *brig;
  if (sandbox.policy.network.mode == policy::NetworkMode::filtered) {
    // Resolved once, when the sandbox is planned (brig serve's start): each
    // exec jail gets these addresses, and its DNS stub answers with them.
    sandbox.warnings = BRIG_TRY(egress::prepare_filtered(sandbox.policy.network.rules));
    if (auto nf = process::find_sibling({"brig-netfilter"}))
      sandbox.context.netfilter_program = *nf;
  }
  sandbox.spec = BRIG_TRY(policy::to_jail_spec(sandbox.policy, sandbox.context));
  BRIG_TRY_VOID(policy::refuse_writable_policy_files(loaded->files, sandbox.spec));
  sandbox.env = policy::jail_environment(sandbox.policy, sandbox.context);
  return sandbox;
}

}  // namespace

Result<Sandbox> plan_sandbox(const std::string& policy_ref, const std::string& workspace,
                             const std::string& cwd) {
  policy::EnvMap env = policy::current_environment();
  const std::string home = policy::caller_home(env);
  return plan(policy_ref, workspace, cwd, std::move(env), home, std::nullopt);
}

Result<Sandbox> plan_sandbox_for(const Account& account, const std::string& policy_ref,
                                 const std::string& workspace, const std::string& cwd) {
  // brig's other variables stay: the operator's configuration, of which the
  // policy passes only what it names. Those that say whose they are must not
  // be brig's own user's.
  policy::EnvMap env = policy::current_environment();
  env["HOME"] = account.home;
  env["USER"] = account.name;
  env["LOGNAME"] = account.name;
  return plan(policy_ref, workspace, cwd, std::move(env), account.home, account);
}

LimitTexts limit_texts(const Sandbox& sandbox) {
  const policy::Policy& p = sandbox.policy;
  const jail::LimitsEnforcement& e = sandbox.limits_enforcement;
  LimitTexts t;
  if (p.limits.memory_bytes) {
    t.memory = policy::format_size(*p.limits.memory_bytes) + " memory";
    if (!e.memory_whole) t.memory += std::string(" ") + jail::kMemoryPerProcess;
  }
  if (p.limits.pids) {
    t.pids = fmt::format("{} processes", *p.limits.pids);
    if (!e.pids_whole) t.pids += std::string(" ") + jail::kPidsPerUser;
  }
  if (p.limits.wall_time)
    t.wall_time = policy::format_duration(*p.limits.wall_time) + " per command";
  return t;
}

protocol::Json sandbox_facts(const Sandbox& sandbox) {
  const LimitTexts t = limit_texts(sandbox);
  protocol::Json limits = protocol::Json::object();
  if (!t.memory.empty()) limits["memory"] = t.memory;
  if (!t.pids.empty()) limits["pids"] = t.pids;
  if (!t.wall_time.empty()) limits["wall_time"] = t.wall_time;
  limits["tier"] = jail::limits_tier_name(sandbox.limits_enforcement.tier);
  if (!sandbox.limits_enforcement.detail.empty())
    limits["why_no_cgroup"] = sandbox.limits_enforcement.detail;
  protocol::Json facts{{"policy", sandbox.policy_name},
                       {"workspace", sandbox.workspace()},
                       {"network", network_text(sandbox.policy)},
                       {"limits", std::move(limits)}};
  // Routes by prefix and target; never a key, nor where one is kept.
  if (!sandbox.policy.llm.routes.empty()) {
    protocol::Json routes = protocol::Json::array();
    for (const policy::LlmRoute& r : sandbox.policy.llm.routes)
      routes.push_back({{"prefix", r.prefix},
                        {"target", r.target},
                        {"dangerously_skip_verify", r.dangerously_skip_verify}});
    facts["llm_routes"] = std::move(routes);
  }
  return facts;
}

std::string network_text(const policy::Policy& p) {
  switch (p.network.mode) {
    case policy::NetworkMode::none:
      break;
    case policy::NetworkMode::proxy:
    case policy::NetworkMode::filtered: {
      auto texts = [](const std::vector<policy::NetRule>& rules) {
        std::vector<std::string> out;
        for (const policy::NetRule& r : rules) out.push_back(r.text);
        return out;
      };
      const policy::NetRules& rules = p.network.rules;
      const bool filtered = p.network.mode == policy::NetworkMode::filtered;
      return fmt::format(
          "{} (HTTP and CONNECT on 127.0.0.1:{}, DNS on 127.0.0.1:{}), to {}{} (ports 80 and 443 "
          "unless one is given){}; anything else is refused",
          filtered ? "through brig's egress proxy, and directly over TCP and UDP under kernel "
                     "rules (network.mode = \"filtered\")"
                   : "only through brig's egress proxy",
          policy::kProxyPort, policy::kDnsPort,
          rules.allow.empty() ? "nothing" : fmt::format("{}", fmt::join(texts(rules.allow), ", ")),
          rules.deny.empty() ? "" : fmt::format(", except {}", fmt::join(texts(rules.deny), ", ")),
          filtered ? "; directly only IPv4 addresses and the names resolved when the jail started, "
                     "`*.domain` names only through the proxy"
                   : "");
    }
    case policy::NetworkMode::dangerously_host:
      return "DANGEROUS: the host's network, unrestricted (network.mode = \"dangerously_host\")";
  }
  return "no network, only the jail's own loopback";
}

std::string llm_text(const policy::Policy& p) {
  if (p.llm.routes.empty()) return {};
  std::vector<std::string> routes;
  for (const policy::LlmRoute& r : p.llm.routes)
    routes.push_back(
        fmt::format("${} (with ${}) to {}", r.base_url_variable, r.key_variable, r.target));
  return fmt::format(
      "LLM API calls from commands go through brig's LLM proxy on 127.0.0.1:{}: {}. Each "
      "command's key variable holds a placeholder that works only through that proxy and only in "
      "that command's jail; brig adds the real key outside the jail, and no real key is in the "
      "sandbox. Use the variables as they are (SDKs read them by default).",
      policy::kLlmPort, fmt::join(routes, ", "));
}

std::string sandbox_instructions(const Sandbox& sandbox) {
  const policy::Policy& p = sandbox.policy;
  std::string text = fmt::format(
      "brig runs every tool call inside a Linux jail built from the policy \"{}\". The "
      "workspace is {} ({}); relative paths start there. ",
      sandbox.policy_name, sandbox.workspace(),
      p.filesystem.workspace == policy::WorkspaceAccess::read_write ? "read-write" : "read-only");
  std::vector<std::string> writable;
  for (const policy::PathRule& r : p.filesystem.read_write) writable.push_back(r.path);
  if (!writable.empty()) text += fmt::format("Also writable: {}. ", fmt::join(writable, ", "));
  text += "System directories are read-only";
  if (p.filesystem.private_home && !sandbox.context.home.empty())
    text += fmt::format("; {} is a private, empty home", sandbox.context.home);
  text += "; /tmp is private and emptied after each command. ";
  if (p.filesystem.workspace == policy::WorkspaceAccess::read_write &&
      !p.filesystem.dangerously_writable_git)
    text +=
        "git works in exec: add, commit, checkout, merge and fetch; what git writes in .git "
        "(objects, refs, logs, index, HEAD, …) is checked and merged back when each command "
        "ends, and the result names anything refused. What git reads as configuration (config, "
        "hooks/, info/, modules/) is read-only, new names at the top of .git stay in the "
        "command's jail, and a rebase or cherry-pick must finish within one command. A kernel "
        "without overlayfs keeps .git "
        "read-only, and the exec result says so. The file tools do not write in .git. ";
  if (const auto weak = policy::weak_hidden_paths(sandbox.spec); !weak.empty())
    text += fmt::format(
        "These hidden paths lie under a writable path, where hiding is not enforced as a whole: "
        "{}. ",
        fmt::join(weak, ", "));
  if (sandbox.context.uid == 0) {
    switch (p.identity.as_root) {
      case policy::RootIdentity::mapped:
        text += fmt::format(
            "Commands run as root (uid 0) in the jail, which is the unprivileged uid {} on the "
            "host: the workspace's files are root's to you, but files only the host's root may "
            "read (like /etc/shadow) stay unreadable. ",
            p.identity.uid);
        break;
      case policy::RootIdentity::user:
        text += fmt::format(
            "Commands run as uid {} (gid {}), in the jail and on the host: files of the host's "
            "root, a root-owned workspace's included, are read-only or unreadable. ",
            p.identity.uid, p.identity.gid);
        break;
      case policy::RootIdentity::dangerously_host_root:
        text += fmt::format(
            "Commands run as root, which is the host's root (without capabilities){}. ",
            p.identity.dangerously_unmask_root_secrets ? "" : "; root's secret files are masked");
        break;
    }
  }
  text += fmt::format("Network: {}. ", network_text(p));
  if (const std::string llm = llm_text(p); !llm.empty()) text += llm + " ";
  const LimitTexts texts = limit_texts(sandbox);
  std::vector<std::string> limits;
  for (const std::string* t : {&texts.memory, &texts.pids, &texts.wall_time})
    if (!t->empty()) limits.push_back(*t);
  if (!limits.empty()) text += fmt::format("Limits: {}. ", fmt::join(limits, ", "));
  if (!p.disabled_tools.empty())
    text += fmt::format("Switched off by the policy: {}. ", fmt::join(p.disabled_tools, ", "));
  text +=
      "Commands run non-interactively (no terminal, stdin empty unless given). A refusal comes "
      "back as a tool error that names the policy rule; use exec's job handle for long commands.";
  return text;
}

}  // namespace brig::sandbox
