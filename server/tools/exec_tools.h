// The command tools: `exec` runs a command in a fresh jail; `job` follows
// one that outlived its call (or whose output was cut). Both share the
// server's JobTable, whose jobs belong to the caller's uid.
#pragma once

#include <algorithm>

#include "jail/base/error.h"
#include "server/exec/job_table.h"
#include "server/tools/registry.h"
#include "server/tools/sandbox.h"

namespace brig::server {

Tool exec_tool(const Sandbox& sandbox, exec::JobTable& jobs);
Tool job_tool(exec::JobTable& jobs);

// Registers exec and job, in that order, unless the sandbox's policy
// disables them (job goes with exec). sandbox and jobs must outlive the
// registry; the server calls jobs.kill_all() when it shuts down. Defined
// here so that brig_exec needs no link to the registry's library.
inline Result<void> register_exec_tools(Registry& registry, const Sandbox& sandbox,
                                        exec::JobTable& jobs) {
  const auto& disabled = sandbox.policy.disabled_tools;
  if (std::find(disabled.begin(), disabled.end(), "exec") != disabled.end()) return {};
  BRIG_TRY_VOID(registry.add(exec_tool(sandbox, jobs)));
  if (std::find(disabled.begin(), disabled.end(), "job") != disabled.end()) return {};
  BRIG_TRY_VOID(registry.add(job_tool(jobs)));
  return {};
}

}  // namespace brig::server
