// Context: what the planner needs to know about one caller and workspace,
// gathered by the caller (brig run, the server) so that planning does no I/O.
#pragma once

#include <sys/types.h>

#include <string>

#include "server/policy/expand.h"

namespace brig::policy {

struct Context {
  // Absolute, canonical; checked by the caller (server/commands/workspace.h).
  std::string workspace;
  std::string cwd;  // the command's host directory; outside the workspace = the workspace
  // The host ids the jail's command runs as: brig's own effective ids (0 =
  // brig runs as root, and the policy's `identity` decides), or those of the
  // other user a root brig serves (server/tools/principals.h).
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;  // the caller's home, absolute; empty or "/" = no private home
  EnvMap env;        // the caller's environment; only what the policy passes reaches the jail
  // brig's own program (`brig connect`), bound read-only at its host path in
  // a `proxy` jail and named by its GIT_SSH_COMMAND, so git over ssh goes
  // through the proxy; empty = not bound, and git over ssh fails.
  std::string connect_program;
  // brig-netfilter (jail/netfilter/), which a `filtered` jail's launcher
  // runs when the host lacks its table; planning a filtered jail without it
  // fails.
  std::string netfilter_program;
};

}  // namespace brig::policy
