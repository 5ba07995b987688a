// `serve`: MCP over stdio or a Unix socket. The options are defined once here
// and shared by brig-server and brig-test-server.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <CLI/App.hpp>

#include "protocol/session.h"
#include "server/exec/job_table.h"
#include "server/tools/registry.h"
#include "server/transport/stream_transport.h"

namespace brig::commands {

// Everything `serve` takes from its command line; defaults are brig's.
struct ServeOptions {
  std::string workspace;                // empty: the current directory (checked, see workspace.h)
  std::string policy = "default";       // a shipped policy's name or a TOML file
  std::string listen;                   // unix:///abs/path.sock; empty: stdio
  std::string socket_mode = "0600";     // octal permission bits of the socket file
  std::vector<std::string> allow_uids;  // users (names or numbers) allowed besides brig's own
  std::vector<std::string> allow_gids;  // groups (names or numbers) whose members are allowed
  std::size_t max_connections = 64;
  std::size_t max_inflight = protocol::SessionOptions{}.max_in_flight_calls;
  std::size_t max_line_bytes = protocol::SessionOptions{}.max_line_bytes;
  std::size_t max_message_bytes = protocol::SessionOptions{}.max_outgoing_bytes;
  std::size_t page_size = protocol::SessionOptions{}.page_size;
  std::size_t send_queue_bytes = transport::StreamLimits{}.send_queue_bytes;
  std::size_t send_budget_bytes = transport::OutputBudget{}.limit;  // all connections' queues
  double stall_timeout_seconds = 30;
  std::string log_level = "info";
  std::string audit_log;  // a file for one JSON line per tool call; empty: no audit log
  // Where state that outlives a server is kept (the write journal, in
  // DIR/writes); empty: $XDG_STATE_HOME/brig, else ~/.local/state/brig.
  std::string state_dir;
  bool jail_pool = true;  // false: --no-jail-pool, every exec's jail built for it
  std::size_t max_jails = exec::JobLimits{}.max_running;        // exec jails running at once
  std::size_t max_jobs = exec::JobLimits{}.max_jobs_per_owner;  // jobs past their call, per uid
  std::size_t max_exec_calls = exec::JobLimits{}.max_exec_calls_per_connection;  // per connection
  std::uint64_t spool_bytes = exec::JobLimits{}.spool_budget;  // all jobs' kept output
  std::uint64_t jails_memory = 0;  // the exec jails' memory limits together; 0 = physical memory
};

// Adds the `serve` subcommand and its options, bound to options. The caller
// runs run_serve() when the subcommand was chosen.
CLI::App* add_serve_command(CLI::App& app, ServeOptions& options);

// Registers extra tools after the shipped ones (brig-test-server's); empty: none.
using ToolInstaller = std::function<Result<void>(tools::Registry&)>;

// Plans the policy's jail, starts the spawner and the file workers, registers
// the shipped tools and then extra_tools, and serves until EOF on stdio or
// SIGTERM/SIGINT/SIGHUP. Returns the exit status: 0 after a clean shutdown,
// 1 when it could not start (the reason is on stderr).
int run_serve(const ServeOptions& options, const ToolInstaller& extra_tools = {});

}  // namespace brig::commands
