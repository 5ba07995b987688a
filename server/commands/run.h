// `brig run [--policy NAME|FILE] [--workspace DIR] [--timeout DUR] [--] CMD ARGS…`:
// one command in a fresh jail, with the caller's stdin, stdout and stderr,
// exiting with the command's status (jail/outcome.h: 128+signal, 124 timed
// out, 125 brig or the jail failed, 126 not executable, 127 not found).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/App.hpp>

namespace brig::commands {

struct RunOptions {
  std::string policy = "default";        // a shipped policy's name or a TOML file
  std::optional<std::string> workspace;  // empty: the current directory (workspace.h)
  std::optional<std::string> timeout;    // a duration ("30s"); empty: the policy's wall_time
  std::vector<std::string> command;      // argv; never empty once parsed
};

// Adds the `run` subcommand bound to options (all but `command`, which
// take_run_command() fills); the caller runs run_command() when it was chosen.
CLI::App* add_run_command(CLI::App& app, RunOptions& options);

// For `brig run …` (argv[1] == "run"): everything from the first operand, or
// after "--", is the command's, so `brig run ls -la` needs no "--" and the
// command's options never reach brig's parser. Returns that argv and cuts
// *argc before it; returns nothing for other commands.
std::vector<std::string> take_run_command(int* argc, char** argv);

// Runs the command and returns the status to exit with. brig's own failures
// (bad policy, refused workspace) are 125, with the reason on stderr; no
// command at all is a usage error, 2. Once the jail has run, it exits the
// process with that status instead of returning (sanitizer builds return).
int run_command(const RunOptions& options);

}  // namespace brig::commands
