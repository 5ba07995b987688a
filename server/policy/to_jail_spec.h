// The planner: Policy + Context -> the JailSpec and environment of one jail.
// Pure (no I/O, no clock): everything it knows comes in the arguments, and
// paths it cannot vouch for are marked optional for the jail to skip.
//
// The mount plan, in the order the jail applies it (parents first):
//   /proc, /dev (the jail's own, plus the policy's dangerously_devices), a
//   private /tmp tmpfs, a private home tmpfs at the caller's home path, the
//   workspace at its own path (brig as root with as_root = "mapped": keeping
//   its owner, through an idmapped mount), the policy's
//   read_only and read_write binds, the workspace's git protection, and a
//   mask over every hidden path (and, when uid 0 is host root, every root
//   secret) that lies under a bound tree. Sorted by path so that a parent
//   always comes before what is mounted inside it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "jail/base/error.h"
#include "jail/spec.h"
#include "server/policy/context.h"
#include "server/policy/policy.h"

namespace brig::policy {

// Files that only host root can read, masked in a jail whose uid 0 is host
// root unless identity.dangerously_unmask_root_secrets.
inline constexpr const char* kRootSecrets[] = {
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/ssh/ssh_host_dsa_key",
    "/etc/ssh/ssh_host_ecdsa_key",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/sudoers",
    "/etc/sudoers.d",
};

// A `proxy` jail's listeners on its own 127.0.0.1, in this order: brig's
// HTTP proxy (CONNECT too) on kProxyPort, then the DNS stub on kDnsPort
// over UDP and over TCP (egress::jail_listeners reads them in this order).
// Its environment points every usual proxy variable at the first, its
// /etc/resolv.conf at the others.
std::vector<jail::Listener> egress_listeners();

// The LLM proxy's listener (TCP kLlmPort on the jail's 127.0.0.1): a jail
// whose policy has llm.routes gets it in every mode, after any
// egress_listeners(), so it is always the last. Its environment gets the
// routes' variables from the caller (llm_environment in llm_routes.h), with
// a placeholder made for that one jail.
jail::Listener llm_listener();

// What a `proxy` jail's environment gets unless environment.set names it:
// HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and their lower-case forms, NO_PROXY,
// and what Node, npm, pip, cargo and yarn read instead. "NAME", "value".
std::vector<std::pair<std::string, std::string>> proxy_environment();

// The jail for `policy` run by ctx's caller in ctx's workspace. Fails when
// the workspace lies in a hidden path, or a policy path collides with the
// jail's own /proc or /dev.
Result<jail::JailSpec> to_jail_spec(const Policy& policy, const Context& ctx);

// The jail's whole environment, "NAME=value" sorted by name: the host
// variables environment.pass names, then environment.set over them.
std::vector<std::string> jail_environment(const Policy& policy, const Context& ctx);

// argv to run in the jail, with jail_environment() and a working directory of
// ctx.cwd when it lies in the workspace, else the workspace.
jail::ExecRequest exec_request(const Policy& policy, const Context& ctx,
                               std::vector<std::string> argv);

}  // namespace brig::policy
