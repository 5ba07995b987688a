#include "server/commands/banner.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace brig::commands {
namespace {

std::string transport_text(const ServingSummary& s) {
  if (!s.socket_path) return "stdio (one JSON-RPC message per line on stdin/stdout)";
  return fmt::format("unix socket {} ({})", *s.socket_path, s.socket_access);
}

std::string json_quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The client entry on one line, "command" before "args" as people write it.
std::string client_config(const ServingSummary& s) {
  std::vector<std::string> args;
  std::string command;
  if (s.socket_path) {
    command = "socat";
    args = {"STDIO", "UNIX-CONNECT:" + *s.socket_path};
  } else {
    command = s.brig_command;
    args = {"serve", "--workspace", s.workspace, "--policy", s.policy};
  }
  std::vector<std::string> quoted_args;
  for (const std::string& a : args) quoted_args.push_back(json_quoted(a));
  return fmt::format(R"(    {{"mcpServers": {{"brig": {{"command": {}, "args": [{}]}}}}}})",
                     json_quoted(command), fmt::join(quoted_args, ", "));
}

}  // namespace

std::string startup_banner(const ServingSummary& s) {
  std::string out = fmt::format(
      "brig {} — MCP tool server; every tool call runs in a Linux jail\n"
      "  workspace  {}\n"
      "  policy     {}\n"
      "  transport  {}\n\n",
      s.version, s.workspace, s.policy, transport_text(s));
  if (s.socket_path) {
    out += fmt::format(
        "Clients connect to the socket; one that only starts stdio servers can reach it\n"
        "through socat, e.g. in claude_desktop_config.json:\n{}\n\n"
        "Stop with Ctrl-C (or SIGTERM); the socket file is removed.\n",
        client_config(s));
  } else {
    out += fmt::format(
        "brig is meant to be started by an MCP client. Add it to the client's configuration,\n"
        "e.g. claude_desktop_config.json:\n{}\n\n"
        "Reading JSON-RPC from stdin now; end of input (Ctrl-D) or Ctrl-C quits.\n",
        client_config(s));
  }
  return out;
}

std::string serving_log_line(const ServingSummary& s) {
  return fmt::format("brig {} serving workspace {} with policy {} on {}", s.version, s.workspace,
                     s.policy, transport_text(s));
}

}  // namespace brig::commands
