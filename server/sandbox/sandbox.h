// Sandbox: what every tool of one `brig serve` needs to run work in a jail —
// the resolved policy, the caller and workspace it was planned for, the
// JailSpec and environment planned from them, and the spawner that clones
// the jails. brig's own is built once at start-up (server/commands/serve.cc);
// a root brig plans one more for each other user it serves
// (server/tools/principals.h). Read-only once built; outlives every session.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "jail/layer_report.h"
#include "jail/spec.h"
#include "protocol/json_rpc.h"
#include "server/egress/relay.h"
#include "server/llm/proxy.h"
#include "server/policy/context.h"
#include "server/policy/policy.h"
#include "server/spawner/spawner.h"

namespace brig::sandbox {

struct Sandbox {
  policy::Policy policy;
  std::string policy_name;       // as the operator named it: "default", or a file path
  policy::Context context;       // workspace, caller ids, home, host environment
  jail::JailSpec spec;           // policy::to_jail_spec(policy, context)
  std::vector<std::string> env;  // policy::jail_environment(policy, context): "NAME=value"
  std::shared_ptr<spawner::Spawner> spawner;
  // Serves the listeners of a `proxy` or `filtered` policy's jails (the egress proxy and
  // DNS stub); null for the other modes. One for every sandbox of a server.
  std::shared_ptr<egress::Relay> relay;
  // Serves the LLM listener of every jail whose policy lists llm.routes,
  // with the routes' real keys (brig's own); null without routes.
  std::shared_ptr<llm::Proxy> llm;
  // How the spec's memory and pids limits hold here: serve.cc asks the
  // kernel (jail::cgroups::probe) once the spawner's cgroup is settled. By
  // default nothing is whole, so that brig never claims a limit it did not
  // find enforced.
  jail::LimitsEnforcement limits_enforcement;
  // Said once when the sandbox is planned: a `filtered` policy's names that
  // did not resolve (egress::prepare_filtered).
  std::vector<std::string> warnings;

  const std::string& workspace() const { return context.workspace; }
  // True when uid 0 inside the jail is host root (brig runs as root and the
  // policy says identity.as_root = "dangerously_host_root").
  bool host_root() const {
    return context.uid == 0 &&
           policy.identity.as_root == policy::RootIdentity::dangerously_host_root;
  }
};

// Another local user whose calls a root brig runs: its ids as SO_PEERCRED
// reported them, and its passwd entry's name and home.
struct Account {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;  // for USER and LOGNAME in the jail
  std::string home;  // absolute; the private home's path and the policy's `~`
};

// Loads the policy `policy_ref` (a shipped name or a file) for this process's
// user and environment, and plans the jail for `workspace` (absolute,
// checked) entered from the host directory `cwd`. The spawner is left empty
// for the caller to start. Fails with every policy error, one per line, or
// the planner's error.
Result<Sandbox> plan_sandbox(const std::string& policy_ref, const std::string& workspace,
                             const std::string& cwd);

// The same plan for `account` instead of this process's user: the policy
// read with `~` and $HOME, $USER, $LOGNAME as the account's, and the jail's
// command running as its uid and gid. Only a root brig can run it so (the
// kernel lets an unprivileged one map nothing but its own ids). The spawner
// is left empty.
Result<Sandbox> plan_sandbox_for(const Account& account, const std::string& policy_ref,
                                 const std::string& workspace, const std::string& cwd);

// The policy's limits as brig states them, each with how it holds here:
// "4GiB memory" where a cgroup caps the jail, "4GiB memory per process, not
// enforced as a whole" where only RLIMIT_DATA does. Empty fields: no limit.
struct LimitTexts {
  std::string memory;
  std::string pids;
  std::string wall_time;
};
LimitTexts limit_texts(const Sandbox& sandbox);

// What the jail's network reaches, as one phrase for the model: "no
// network, only the jail's own loopback", the proxy and what it allows, or
// the host's.
std::string network_text(const policy::Policy& p);

// The LLM routes as one paragraph for the model: which variables point
// where, and that the key there is a placeholder; "" without routes.
std::string llm_text(const policy::Policy& p);

// What the audit log's start line records about this sandbox: policy,
// workspace, and limits with how they hold (tier, and why no cgroup).
protocol::Json sandbox_facts(const Sandbox& sandbox);

// The MCP `instructions` for this sandbox: what the model's tools can and
// cannot do here (workspace access, other writable paths, private home and
// /tmp, network, limits, tools switched off), in a few sentences.
std::string sandbox_instructions(const Sandbox& sandbox);

}  // namespace brig::sandbox
