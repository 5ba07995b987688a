#include "server/tools/sandbox.h"

#include <utility>

#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"

namespace brig::server {

Result<Sandbox> plan_sandbox(const std::string& policy_ref, const std::string& workspace,
                             const std::string& cwd) {
  policy::EnvMap env = policy::current_environment();
  const std::string home = policy::caller_home(env);
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
  sandbox.spec = BRIG_TRY(policy::to_jail_spec(sandbox.policy, sandbox.context));
  sandbox.env = policy::jail_environment(sandbox.policy, sandbox.context);
  return sandbox;
}

}  // namespace brig::server
