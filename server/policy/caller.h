// What brig learns about the user running it, for `~`/`$VAR` expansion and
// the planner's Context: the environment, the home directory, the ids.
#pragma once

#include <string>

#include "server/policy/context.h"
#include "server/policy/expand.h"

namespace brig::policy {

// This process's environment (environ) by name.
EnvMap current_environment();

// The caller's home: $HOME when it is absolute, else the passwd entry of the
// effective uid; symlinks resolved when it exists. Empty when neither says.
std::string caller_home(const EnvMap& env);

// A Context for a command run in `workspace` (absolute, canonical) from the
// host directory `cwd`, by this process's effective user.
Context caller_context(std::string workspace, std::string cwd, EnvMap env, std::string home);

}  // namespace brig::policy
