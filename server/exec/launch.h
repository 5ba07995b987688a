// launch_job(): one exec from checked arguments to a running Job — the plan,
// the jail's stdio (pipes for stdout and stderr; stdin from /dev/null, a
// memfd holding the `stdin` text, or a pipe when stdin_open), the spawn, and
// the Job that follows it, added to the table.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include <asio/awaitable.hpp>

#include "jail/base/error.h"
#include "server/exec/exec_args.h"
#include "server/exec/job.h"
#include "server/exec/job_table.h"
#include "server/sandbox/sandbox.h"

namespace brig::exec {

// Fails (with a message for the model) when args do not fit the policy, the
// owner runs too many jobs, or the spawner refused the jail.
asio::awaitable<Result<std::shared_ptr<Job>>> launch_job(const sandbox::Sandbox& sandbox,
                                                         JobTable& table, const ExecArgs& args,
                                                         uid_t owner);

// A Process over a jail the spawner started. Listeners the jail has (a
// `proxy` policy's) are served by `relay` under the policy's network rules,
// as `label` in its records, until the jail ends; without a relay they are
// closed, and the jail's connections to them refused. A policy with
// llm.routes gives the jail one listener more, the last, which `llm`
// serves for `placeholder` (the one in the jail's environment) likewise.
Process process_of(spawner::RunningJail running, const std::shared_ptr<egress::Relay>& relay,
                   const policy::Policy& policy, const std::string& label,
                   const std::shared_ptr<llm::Proxy>& llm = nullptr,
                   const std::string& placeholder = "");

}  // namespace brig::exec
