// `brig policy check NAME|FILE` and `brig policy show NAME|FILE`: validate a
// policy (every error with file:line:col and what to write instead), or print
// it fully resolved (after `extends`, `~` and `$VAR`) as TOML that loads as is.
#pragma once

#include <string>

#include <CLI/App.hpp>

namespace brig::commands {

struct PolicyOptions {
  enum class Action { none, check, show };
  Action action = Action::none;  // set by the subcommand that was parsed
  std::string policy;            // a shipped policy's name or a TOML file
};

// Adds `policy` with its `check` and `show` subcommands, bound to options.
CLI::App* add_policy_command(CLI::App& app, PolicyOptions& options);

// Runs the chosen action. Exit status: 0 valid (check prints a summary on
// stdout, show the policy); 1 invalid (the errors are on stderr).
int run_policy_command(const PolicyOptions& options);

}  // namespace brig::commands
