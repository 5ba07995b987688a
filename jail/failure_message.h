// The launcher's words for what the jail's child reported: a failed step
// with its input, and what the caller should hear about the workspace's
// .git.
#pragma once

#include <string>

#include "jail/child_plan.h"
#include "jail/status_record.h"
#include "jail/steps/cgroups.h"

namespace brig::jail {

// "<the step's input>: <strerror>" for a setup_failed record, with the
// likely cause where the errno alone would mislead (a planted symlink, a
// directory the jail's host uid may not search). argv0: the command's.
std::string describe_failure(const ChildPlan& p, const cgroups::Group& group, const StatusRecord& r,
                             const std::string& argv0);

// What the command's caller should know about the workspace's .git after
// the jail (jail/steps/git_state.h); empty when all went as planned.
std::string git_warning(const StatusRecord& r);

}  // namespace brig::jail
