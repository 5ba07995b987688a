// The start-up text `brig serve` writes to stderr when stderr is a terminal:
// what it serves and how to connect a client. Logs carry the same facts in
// one line otherwise.
#pragma once

#include <optional>
#include <string>

namespace brig::commands {

struct ServingSummary {
  std::string version;
  std::string workspace;                   // absolute
  std::string policy;                      // as given: a name or a file
  std::optional<std::string> socket_path;  // empty: stdio
  std::string socket_access;  // e.g. "mode 0600; allowed peers: uids 1000" (socket only)
  std::string brig_command;   // how a client starts brig: an absolute path or "brig"
};

// Several lines for a person: the summary, then a sample MCP client
// configuration (stdio: the command line; socket: through socat), then how
// to stop.
std::string startup_banner(const ServingSummary& s);

// One line for logs: "serving workspace W with policy P on T".
std::string serving_log_line(const ServingSummary& s);

}  // namespace brig::commands
