// The command line of brig-server (and of brig-test-server, which adds test
// tools): `serve`, `--version`, `help`.
#pragma once

#include "server/commands/serve.h"

namespace brig::server {

// Parses argv and runs the chosen subcommand. The program calls itself by
// argv[0]'s base name ("brig" when the brig front end forwarded to it).
// Returns the exit status: 0 on success and for help/version, 2 for a
// command-line error, 1 when the command failed.
int server_main(int argc, char** argv, const commands::ToolInstaller& add_tools = {});

}  // namespace brig::server
