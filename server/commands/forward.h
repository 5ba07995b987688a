// The brig front end's commands that brig-server implements (`serve`,
// `doctor`): brig stays small and fast for `brig run`, and execs brig-server
// for these with the same argv.
#pragma once

#include <string_view>

#include <CLI/App.hpp>

namespace brig::commands {

// True for a subcommand brig-server implements.
bool is_server_command(std::string_view name);

// Lists the server commands in app's help. Their own --help comes from
// brig-server (brig forwards it), so nothing here parses their options.
void add_server_commands(CLI::App& app);

// Replaces this process with brig-server (next to this executable, or
// ../libexec/brig/brig-server when installed) running argv unchanged, so
// argv[0] stays "brig" in its messages. Returns only on failure, with exit
// status 127 after saying why on stderr.
int exec_brig_server(char** argv);

}  // namespace brig::commands
