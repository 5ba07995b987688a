// The command tools: `exec` runs a command in a fresh jail; `job` follows
// one that outlived its call (or whose output was cut). Both share the
// server's JobTable, whose jobs belong to the caller's uid; exec runs each
// command in the sandbox of the call's principal (server/tools/principals.h).
#pragma once

#include <algorithm>

#include "jail/base/error.h"
#include "server/exec/job_table.h"
#include "server/policy/tool_names.h"
#include "server/tools/principals.h"
#include "server/tools/registry.h"

namespace brig::tools {

Tool exec_tool(Principals& principals, exec::JobTable& jobs);
Tool job_tool(exec::JobTable& jobs);

// Registers exec and job, in that order, unless the policy of brig's own
// sandbox disables them (job goes with exec). principals and jobs must outlive the
// registry; the server calls jobs.kill_all() when it shuts down.
inline Result<void> register_exec_tools(Registry& registry, Principals& principals,
                                        exec::JobTable& jobs) {
  const auto& disabled = principals.own().policy.disabled_tools;
  if (std::find(disabled.begin(), disabled.end(), policy::names::kExec) != disabled.end())
    return {};
  BRIG_TRY_VOID(registry.add(exec_tool(principals, jobs)));
  if (std::find(disabled.begin(), disabled.end(), policy::names::kJob) != disabled.end()) return {};
  BRIG_TRY_VOID(registry.add(job_tool(jobs)));
  return {};
}

}  // namespace brig::tools
