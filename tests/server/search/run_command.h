// Runs a program for a test and collects what it prints.
#pragma once

#include <string>
#include <vector>

namespace brig::search::testing {

struct CommandResult {
  int status = -1;  // exit code, or -1 when it could not run or was killed
  std::string out;
};

// Runs argv[0] (searched in PATH) with exactly `env`, feeding `input` to
// its stdin; stderr is discarded.
CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::string& input = "");

// Whether an executable named `name` is in /usr/bin, /bin or /usr/local/bin.
bool have_program(const std::string& name);

}  // namespace brig::search::testing
