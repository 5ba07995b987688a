#include "server/commands/forward.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "server/process/self_exe.h"

namespace brig::commands {
namespace {

struct ServerCommand {
  std::string_view name;
  const char* description;
};

constexpr std::array<ServerCommand, 2> kServerCommands = {{
    {"serve", "Serve MCP tools over stdio (default) or a Unix socket; see brig serve --help"},
    {"doctor", "Report what this kernel allows and what each policy will really enforce"},
}};

}  // namespace

bool is_server_command(std::string_view name) {
  for (const ServerCommand& c : kServerCommands) {
    if (c.name == name) return true;
  }
  return false;
}

void add_server_commands(CLI::App& app) {
  for (const ServerCommand& c : kServerCommands) {
    app.add_subcommand(std::string(c.name), c.description);
  }
}

int exec_brig_server(char** argv) {
  auto path = process::find_sibling({"brig-server", "../libexec/brig/brig-server"});
  if (!path) {
    std::fprintf(stderr, "brig: %s\n", path.error().to_string().c_str());
    return 127;
  }
  ::execve(path->c_str(), argv, ::environ);
  std::fprintf(stderr, "brig: exec %s: %s\n", path->c_str(), std::strerror(errno));
  return 127;
}

}  // namespace brig::commands
