// brig: the front end. Lean on purpose (DESIGN.md: every linked library costs
// start-up time, and `brig run` must start fast): commands that need the
// whole server are forwarded to brig-server by execve.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "server/commands/connect.h"
#include "server/commands/forward.h"
#include "server/commands/help.h"
#include "server/commands/policy.h"
#include "server/commands/run.h"

int main(int argc, char** argv) {
  using namespace brig;
  // Forwarded before parsing: brig-server owns these commands' options and
  // their --help.
  if (argc >= 2 && commands::is_server_command(argv[1])) return commands::exec_brig_server(argv);

  CLI::App app{"brig: an MCP tool server whose every tool call runs in a Linux jail", "brig"};
  app.set_version_flag("--version", "brig " BRIG_VERSION);
  app.require_subcommand(1);
  commands::add_server_commands(app);
  commands::RunOptions run_options;
  CLI::App* run_cmd = add_run_command(app, run_options);
  commands::PolicyOptions policy_options;
  add_policy_command(app, policy_options);
  commands::ConnectOptions connect_options;
  CLI::App* connect_cmd = add_connect_command(app, connect_options);
  CLI::App* help_cmd = app.add_subcommand("help", "Show help for brig or one of its commands");
  std::string help_topic;
  help_cmd->add_option("command", help_topic, "The command to explain");

  run_options.command = commands::take_run_command(&argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (help_cmd->parsed()) {
    if (help_topic.empty()) {
      std::fputs(commands::full_help(app).c_str(), stdout);
      return 0;
    }
    if (commands::is_server_command(help_topic)) {
      std::string sub = help_topic;
      std::string flag = "--help";
      char* forwarded[] = {argv[0], sub.data(), flag.data(), nullptr};
      return commands::exec_brig_server(forwarded);
    }
    try {
      std::fputs(commands::full_help(*app.get_subcommand(help_topic)).c_str(), stdout);
    } catch (const CLI::OptionNotFound&) {
      std::fprintf(stderr, "brig help: no command %s; see brig --help\n", help_topic.c_str());
      return 2;
    }
    return 0;
  }
  if (run_cmd->parsed()) return commands::run_command(run_options);
  if (connect_cmd->parsed()) return commands::run_connect(connect_options);
  if (policy_options.action != commands::PolicyOptions::Action::none)
    return commands::run_policy_command(policy_options);
  return 2;
}
