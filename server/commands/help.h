// Help text for `help [COMMAND]` in both brig and brig-server.
#pragma once

#include <string>

#include <CLI/App.hpp>
#include <CLI/Formatter.hpp>

namespace brig::commands {

// The help of app itself, usage line included ("brig serve ..."), even after
// a subcommand such as `help` was parsed (App::help() would then describe
// that subcommand instead).
inline std::string full_help(const CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* p = app.get_parent(); p != nullptr; p = p->get_parent()) {
    name = p->get_name() + " " + name;
  }
  return app.get_formatter()->make_help(&app, name, CLI::AppFormatMode::Normal);
}

}  // namespace brig::commands
