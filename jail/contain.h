// The jail's child side: the one function that states the order of every
// step from clone3 to execve. See contain.cc.
#pragma once

#include "jail/child_plan.h"

namespace brig::jail {

// Runs in the child of clone3: waits for the launcher's go byte, builds the
// jail, forks the command and supervises it as the jail's init. Never
// returns; failures are reported on the status fd as {step, errno, index}
// and end the child with status 125.
[[noreturn]] void contain(const ChildPlan& plan);

}  // namespace brig::jail
