// Context: what the planner needs to know about one caller and workspace,
// gathered by the caller (brig run, the server) so that planning does no I/O.
#pragma once

#include <sys/types.h>

#include <string>

#include "server/policy/expand.h"

namespace brig::policy {

struct Context {
  std::string workspace;  // absolute, canonical; checked by the caller (server/workspace.h)
  std::string cwd;        // the command's host directory; outside the workspace = the workspace
  uid_t uid = 0;          // brig's own effective ids: 0 = brig runs as root
  gid_t gid = 0;
  std::string home;  // the caller's home, absolute; empty or "/" = no private home
  EnvMap env;        // the caller's environment; only what the policy passes reaches the jail
};

}  // namespace brig::policy
