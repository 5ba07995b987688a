#include "server/server_cli.h"

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "server/commands/doctor.h"
#include "server/commands/help.h"
#include "server/commands/process_setup.h"
#include "server/commands/serve.h"

namespace brig::server {
namespace {

std::string program_name(const char* argv0) {
  std::string name = argv0 != nullptr ? argv0 : "brig-server";
  const auto slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

}  // namespace

int server_main(int argc, char** argv, const commands::ToolInstaller& add_tools) {
  // Before anything opens a file: a closed fd 0-2 must not be handed out.
  commands::ensure_standard_fds();
  commands::ignore_sigpipe();

  CLI::App app{"brig: an MCP tool server whose every tool call runs in a Linux jail",
               program_name(argc > 0 ? argv[0] : nullptr)};
  app.set_version_flag("--version", "brig " BRIG_VERSION);
  app.require_subcommand(1);
  commands::ServeOptions serve;
  CLI::App* serve_cmd = add_serve_command(app, serve);
  commands::DoctorOptions doctor;
  CLI::App* doctor_cmd = add_doctor_command(app, doctor);
  CLI::App* help_cmd = app.add_subcommand("help", "Show help for brig or one of its commands");
  std::string help_topic;
  help_cmd->add_option("command", help_topic, "The command to explain");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (help_cmd->parsed()) {
    const CLI::App* topic = &app;
    if (!help_topic.empty()) {
      try {
        topic = app.get_subcommand(help_topic);
      } catch (const CLI::OptionNotFound&) {
        std::fprintf(stderr, "%s help: no command %s\n", app.get_name().c_str(),
                     help_topic.c_str());
        return 2;
      }
    }
    std::fputs(commands::full_help(*topic).c_str(), stdout);
    return 0;
  }

  // Before any tool or thread exists: the probes fork.
  if (doctor_cmd->parsed()) return commands::run_doctor(doctor);

  if (serve_cmd->parsed()) return commands::run_serve(serve, add_tools);
  return 2;
}

}  // namespace brig::server
