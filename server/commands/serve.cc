#include "server/commands/serve.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include "jail/steps/cgroups.h"
#include "server/commands/banner.h"
#include "server/commands/logging.h"
#include "server/commands/process_setup.h"
#include "server/commands/workspace.h"
#include "server/egress/relay.h"
#include "server/llm/proxy.h"
#include "server/policy/caller.h"
#include "server/policy/writable.h"
#include "server/process/self_exe.h"
#include "server/sandbox/sandbox.h"
#include "server/session/audit_log.h"
#include "server/session/server.h"
#include "server/tools/exec_tools.h"
#include "server/tools/file_tools.h"
#include "server/tools/principals.h"
#include "server/transport/socket_dir.h"
#include "server/transport/stdio_transport.h"

namespace brig::commands {
namespace {

// The machine's RAM: the default budget of the jails' memory limits together.
std::uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(size)
             : UINT64_MAX;
}

constexpr const char* kServeFooter = R"(
On stdio, stdout carries only JSON-RPC (one message per line) and logs go to
stderr. End of input, SIGTERM, SIGINT or SIGHUP cancels every call in flight
and exits with status 0 within about a second.

With --listen, each connection is an independent MCP session. The socket file
is created with --socket-mode; an existing socket nobody listens on is
replaced, a live one is an error, and the file is removed at exit. Peers are
checked with SO_PEERCRED: brig's own uid, plus --allow-uid users and members
(primary group) of --allow-gid groups. Another user's calls run as that user
(its uid, gid and home), so only a root brig admits other users. A client
that stops reading its output
makes brig stop reading its input once --send-queue-bytes are queued, and is
disconnected if the queue stays that full for --stall-timeout seconds.

Examples:
  brig serve --workspace ~/project
  brig serve --listen unix:///run/user/$(id -u)/brig.sock --workspace ~/project)";

Result<mode_t> parse_mode(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text.c_str(), &end, 8);
  if (text.empty() || *end != '\0' || errno != 0 || v > 0777) {
    return std::unexpected(
        Error{"parse --socket-mode", text, "expected octal permission bits, 0 to 0777"});
  }
  return static_cast<mode_t>(v);
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

Result<uid_t> resolve_user(const std::string& text) {
  if (all_digits(text)) return static_cast<uid_t>(std::stoul(text));
  if (const passwd* pw = ::getpwnam(text.c_str())) return pw->pw_uid;
  return std::unexpected(Error{"parse --allow-uid", text, "no such user"});
}

Result<gid_t> resolve_group(const std::string& text) {
  if (all_digits(text)) return static_cast<gid_t>(std::stoul(text));
  if (const group* gr = ::getgrnam(text.c_str())) return gr->gr_gid;
  return std::unexpected(Error{"parse --allow-gid", text, "no such group"});
}

// Why an unprivileged brig admits no other user: it could serve one only
// with its own identity (docs/server.md, "Other users").
std::string cannot_serve_others(uid_t self) {
  return fmt::format(
      "brig runs as uid {}, not root, and the kernel lets an unprivileged jail take no ids but "
      "brig's own, so that user's commands and file operations would run with brig's "
      "permissions instead of its own; run brig as root, or a brig of that user's own",
      self);
}

// The egress proxy and DNS stub of a `proxy` or `filtered` policy's jails;
// null for the other modes. Every decision goes to the audit log (refusals rate-limited
// per jail by the relay); nothing to the server's log, see below.
Result<std::shared_ptr<egress::Relay>> start_relay(const policy::Policy& p,
                                                   std::shared_ptr<session::AuditLog> audit) {
  if (p.network.mode != policy::NetworkMode::proxy &&
      p.network.mode != policy::NetworkMode::filtered)
    return nullptr;
  egress::RelayOptions options;
  options.audit = [audit = std::move(audit)](const egress::EgressRecord& r) {
    // Only the audit log: this runs on the relay's thread, and the server's
    // logger has a single-threaded sink (logging.cc).
    if (audit) audit->write_egress(r);
  };
  auto relay = egress::Relay::start(std::move(options));
  if (!relay) return std::unexpected(relay.error());
  return std::shared_ptr<egress::Relay>(std::move(*relay));
}

// The LLM proxy of a policy with llm.routes; null without. Its keys are
// read here, after the spawner started (it must not inherit one), and
// every variable that held one is wiped from this process's environment.
// Each request goes to the audit log only, as the relay's decisions do.
Result<std::shared_ptr<llm::Proxy>> start_llm_proxy(sandbox::Sandbox& sandbox,
                                                    std::shared_ptr<session::AuditLog> audit) {
  const policy::Policy& p = sandbox.policy;
  if (p.llm.routes.empty()) return nullptr;
  policy::EnvMap env = policy::current_environment();
  auto keys = llm::load_keys(p.llm.routes, env);
  // Every copy of a key variable goes: this one, the planned context's
  // (its environment, for `pass`), and the process's own.
  llm::forget_key_variables(p.llm.routes, env);
  llm::forget_key_variables(p.llm.routes, sandbox.context.env);
  llm::forget_key_variables(p.llm.routes);
  if (!keys) return std::unexpected(keys.error());
  llm::ProxyOptions options;
  options.audit = [audit = std::move(audit)](const llm::LlmRecord& r) {
    if (audit) audit->write_llm(r);
  };
  auto proxy = llm::Proxy::start(p.llm.routes, std::move(*keys), std::move(options));
  if (!proxy) return std::unexpected(proxy.error());
  return std::shared_ptr<llm::Proxy>(std::move(*proxy));
}

Result<transport::PeerAllowList> allow_list(const ServeOptions& o) {
  const uid_t self = ::geteuid();
  transport::PeerAllowList allow{{self}, {}};
  for (const std::string& u : o.allow_uids) {
    const uid_t uid = BRIG_TRY(resolve_user(u));
    if (self != 0 && uid != self)
      return std::unexpected(Error{"admit --allow-uid", u, cannot_serve_others(self)});
    allow.uids.push_back(uid);
  }
  for (const std::string& g : o.allow_gids) {
    const gid_t gid = BRIG_TRY(resolve_group(g));
    // A group admits whoever has it as primary group now or later: other
    // users, which only root can serve as themselves.
    if (self != 0) {
      return std::unexpected(
          Error{"admit --allow-gid", g,
                "it admits every user whose primary group it is; " + cannot_serve_others(self)});
    }
    allow.gids.push_back(gid);
  }
  return allow;
}

// The command a client config should run: the `brig` front end next to this
// binary (build tree) or in ../../bin (installed under libexec/brig/).
std::string brig_command() {
  auto path = process::find_sibling({"brig", "../../bin/brig"});
  return path ? *path : "brig";
}

std::string current_directory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : std::string();
}

// `path` made absolute against the current directory (lexically: the
// writable-tree check compares it with real paths as well).
std::string absolute_path(const std::string& path) {
  return path.starts_with('/') ? path : current_directory() + "/" + path;
}

int fail(const Error& e) {
  std::fprintf(stderr, "brig serve: %s\n", e.to_string().c_str());
  return 1;
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
  CLI::App* cmd =
      app.add_subcommand("serve", "Serve MCP tools over stdio (default) or a Unix socket");
  cmd->footer(kServeFooter);
  // Defaults are written into the descriptions: CLI11's own "TYPE=default"
  // rendering is unreadable next to option_text.
  cmd->add_option("--workspace", o.workspace,
                  "Directory the tools work in (default: the current directory, refused when it "
                  "is /, $HOME or a system directory)")
      ->option_text("DIR");
  cmd->add_option(
         "--policy", o.policy,
         fmt::format("Jail policy: a shipped policy name or a TOML file (default {})", o.policy))
      ->option_text("NAME|FILE");
  cmd->add_option("--listen", o.listen, "Serve on a Unix socket instead of stdio")
      ->option_text("unix:///ABS/PATH.sock");
  cmd->add_option(
         "--socket-mode", o.socket_mode,
         fmt::format("Permission bits of the socket file, octal (default {})", o.socket_mode))
      ->option_text("MODE");
  cmd->add_option("--allow-uid", o.allow_uids,
                  "Also accept socket peers running as this user (name or uid; repeatable), "
                  "whose calls run as that user; root only. brig's own uid is always accepted")
      ->option_text("USER")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--allow-gid", o.allow_gids,
                  "Also accept socket peers whose primary group is this (name or gid; "
                  "repeatable), each running as itself; root only")
      ->option_text("GROUP")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--max-connections", o.max_connections,
                  fmt::format("Socket connections open at once; more are closed when accepted "
                              "(default {})",
                              o.max_connections))
      ->option_text("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-inflight", o.max_inflight,
                  fmt::format("Tool calls running at once per connection; more are answered "
                              "with JSON-RPC error -32603 (default {})",
                              o.max_inflight))
      ->option_text("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-line-bytes", o.max_line_bytes,
                  fmt::format("Longest incoming line; a longer one is skipped and answered with "
                              "-32600 (default {})",
                              o.max_line_bytes))
      ->option_text("BYTES")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-message-bytes", o.max_message_bytes,
                  fmt::format("Longest outgoing message; a bigger tool result becomes an isError "
                              "result (default {}, at least 65536: the stand-in error for an "
                              "oversized reply must fit)",
                              o.max_message_bytes))
      ->option_text("BYTES")
      ->check(CLI::Range(std::size_t{64} << 10, std::size_t{1} << 40));
  cmd->add_option("--page-size", o.page_size,
                  fmt::format("Tools per tools/list page (default {})", o.page_size))
      ->option_text("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--send-queue-bytes", o.send_queue_bytes,
                  fmt::format("Output queued per connection before brig stops reading that "
                              "connection (default {})",
                              o.send_queue_bytes))
      ->option_text("BYTES")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--send-budget-bytes", o.send_budget_bytes,
                  fmt::format("Output queued on all connections together; while it is full, a "
                              "connection holding more than {} of it reads no input and starts "
                              "no file operation or command (default {})",
                              transport::OutputBudget::kFairShare, o.send_budget_bytes))
      ->option_text("BYTES")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--stall-timeout", o.stall_timeout_seconds,
                  fmt::format("Seconds a connection's output may stay over --send-queue-bytes, "
                              "or a closing connection may take to flush, before it is closed "
                              "(default {})",
                              o.stall_timeout_seconds))
      ->option_text("SECONDS")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--log-level", o.log_level,
                  fmt::format("Level of the stderr log: {} (default {})",
                              fmt::join(kLogLevelNames, "|"), o.log_level))
      ->option_text("LEVEL")
      ->check(
          CLI::IsMember(std::vector<std::string>(kLogLevelNames.begin(), kLogLevelNames.end())));
  cmd->add_option("--audit-log", o.audit_log,
                  "Append one JSON line per tool call to this file (created 0600): time, client, "
                  "tool, arguments (long strings cut, env values never), outcome, exit code, "
                  "bytes, duration, and the error text that names a policy denial")
      ->option_text("FILE");
  cmd->add_option("--state-dir", o.state_dir,
                  "Keep state that outlives this server here: the journal of writes in flight, "
                  "whose temporary files the next server removes should this one be killed "
                  "(DIR/writes; default $XDG_STATE_HOME/brig, else ~/.local/state/brig). "
                  "Must be outside everything a jail can write")
      ->option_text("DIR");
  cmd->add_option(exec::kMaxJailsOption, o.max_jails,
                  fmt::format("exec jails running at once in this server, all clients together; "
                              "an exec over it is refused with a tool error (default {})",
                              o.max_jails))
      ->option_text("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option(exec::kMaxJobsOption, o.max_jobs,
                  fmt::format("Jobs (commands still running after their exec call returned) one "
                              "user may have running, all its connections together; a command "
                              "that would be one more is killed when its call returns, and the "
                              "call says why (default {})",
                              o.max_jobs))
      ->option_text("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option(exec::kMaxExecCallsOption, o.max_exec_calls,
                  fmt::format("exec calls one connection may have in flight; more are refused "
                              "with a tool error (default {})",
                              o.max_exec_calls))
      ->option_text("N")
      ->check(CLI::PositiveNumber);
  cmd->add_option(exec::kSpoolBytesOption, o.spool_bytes,
                  fmt::format("Output brig keeps of all jobs together (in memory, outside the "
                              "jails' cgroups); when full, the oldest finished jobs' output is "
                              "dropped first, then an exec is refused (default {})",
                              o.spool_bytes))
      ->option_text("BYTES")
      ->check(CLI::PositiveNumber);
  cmd->add_option(exec::kJailsMemoryOption, o.jails_memory,
                  "The memory limits of the exec jails running at once, together: an exec whose "
                  "jail's limit would take the sum over it is refused, and a jail without a "
                  "memory limit counts as all of it. Where each jail's limit is enforced as a "
                  "whole (cgroups; brig doctor), the jails cannot take more together "
                  "(default: this machine's physical memory)")
      ->option_text("BYTES")
      ->check(CLI::PositiveNumber);
  cmd->add_flag_callback(
      "--no-jail-pool", [&o] { o.jail_pool = false; },
      "Build every exec's jail when the call comes, instead of taking the one built ahead for "
      "the next call (equally strict; slower by the jail's setup)");
  return cmd;
}

int run_serve(const ServeOptions& o, const ToolInstaller& extra_tools) {
  init_logging(o.log_level);

  std::optional<std::string> socket_path;
  if (!o.listen.empty()) {
    auto path = transport::parse_listen_uri(o.listen);
    if (!path) return fail(path.error());
    socket_path = *path;
    // A warning, not a refusal: a shared directory may be meant (a team's
    // group), and the operator is the one to judge (docs/server.md).
    for (const std::string& risk : transport::socket_dir_risks(*socket_path, ::geteuid()))
      spdlog::warn("{}", risk);
  }
  const auto mode = parse_mode(o.socket_mode);
  if (!mode) return fail(mode.error());
  const auto allow = allow_list(o);
  if (!allow) return fail(allow.error());
  const char* home = std::getenv("HOME");
  const auto workspace =
      resolve_workspace(o.workspace.empty() ? std::nullopt : std::optional(o.workspace),
                        current_directory(), home != nullptr ? home : "");
  if (!workspace) return fail(workspace.error());
  if (workspace->warning) spdlog::warn("{}", *workspace->warning);

  // Before any other process is started: under a delegated cgroup v2 scope
  // brig moves into a leaf so that the jails' groups can get controllers.
  if (const std::string moved = jail::cgroups::enter_delegated_leaf(); !moved.empty())
    spdlog::info("{}", moved);

  // The io_context first: everything below holds sockets on it.
  asio::io_context io(1);
  auto sandbox = sandbox::plan_sandbox(o.policy, workspace->path, current_directory());
  if (!sandbox) return fail(sandbox.error());
  for (const std::string& w : sandbox->warnings) spdlog::warn("{}", w);
  // Before anything else is read (the LLM proxy's keys): the spawner must
  // not inherit a secret.
  auto spawner_path = process::find_sibling({"brig-spawner", "../libexec/brig/brig-spawner"});
  if (!spawner_path) return fail(spawner_path.error());
  auto spawner = spawner::Spawner::start(io.get_executor(), *spawner_path, o.jail_pool);
  if (!spawner) return fail(spawner.error());
  sandbox->spawner = std::move(*spawner);
  // The spawner makes the jails' cgroups from brig's own cgroup, so what
  // holds for brig here holds for them.
  sandbox->limits_enforcement = jail::cgroups::probe(sandbox->spec.limits);
  if (!sandbox->limits_enforcement.memory_whole || !sandbox->limits_enforcement.pids_whole)
    spdlog::warn("limits not enforced as a whole here (no usable cgroup): {}",
                 sandbox->limits_enforcement.detail);
  // Shared: the egress relay's thread writes its decisions here too, and
  // the relay may outlive this frame's other locals in a job's lease.
  std::shared_ptr<session::AuditLog> audit;
  if (!o.audit_log.empty()) {
    if (auto safe = policy::refuse_writable_audit_log(absolute_path(o.audit_log), sandbox->spec);
        !safe)
      return fail(safe.error());
    auto opened = session::AuditLog::open(o.audit_log);
    if (!opened) return fail(opened.error());
    audit = std::move(*opened);
    audit->write_start(sandbox::sandbox_facts(*sandbox));
  }
  if (auto relay = start_relay(sandbox->policy, audit); !relay) {
    return fail(relay.error());
  } else {
    sandbox->relay = std::move(*relay);
  }
  if (auto proxy = start_llm_proxy(*sandbox, audit); !proxy) {
    return fail(proxy.error());
  } else {
    sandbox->llm = std::move(*proxy);
  }
  auto worker_path = process::find_sibling({"brig-worker", "../libexec/brig/brig-worker"});
  if (!worker_path) return fail(worker_path.error());
  // Where the writes' temporary files are recorded, so that the next server
  // removes what a killed one left (server/pool/write_journal.h); each pool
  // refuses a root its own jails could write.
  const std::string journal_root = o.state_dir.empty() ? pool::WriteJournal::default_root()
                                                       : absolute_path(o.state_dir) + "/writes";
  if (journal_root.empty()) {
    spdlog::warn(
        "no write journal: no --state-dir, and neither XDG_STATE_HOME nor HOME is an absolute "
        "path; a write in flight when brig-server is killed will leave its temporary file");
  }
  pool::WorkerPool workers(io.get_executor(), *sandbox, *worker_path, journal_root);
  // Other users' sandboxes are this one's plan for their account: the same
  // policy, workspace and directory.
  tools::Principals principals(
      io.get_executor(), *sandbox, &workers,
      [&o, ws = workspace->path, cwd = current_directory(), relay = sandbox->relay,
       llm = sandbox->llm](const sandbox::Account& account) {
        auto planned = sandbox::plan_sandbox_for(account, o.policy, ws, cwd);
        if (planned) planned->relay = relay;
        // brig's own keys, for every user it serves (docs/llm.md).
        if (planned) planned->llm = llm;
        return planned;
      },
      *worker_path);

  exec::JobLimits job_limits;
  job_limits.max_running = o.max_jails;
  job_limits.max_jobs_per_owner = o.max_jobs;
  job_limits.max_exec_calls_per_connection = o.max_exec_calls;
  job_limits.spool_budget = o.spool_bytes;
  job_limits.memory_budget = o.jails_memory != 0 ? o.jails_memory : physical_memory();
  exec::JobTable jobs(job_limits);  // declared before the registry: its tools hold it

  tools::Registry registry;
  if (auto added = tools::register_exec_tools(registry, principals, jobs); !added)
    return fail(added.error());
  // An operation's reply leaves room in the message for its JSON escaping
  // and the result's other fields.
  const tools::FileToolLimits file_limits{.timeout = std::chrono::seconds(30),
                                          .max_bytes = o.max_message_bytes / 2};
  if (auto added = tools::register_file_tools(registry, principals, file_limits); !added)
    return fail(added.error());
  if (extra_tools) {
    if (auto added = extra_tools(registry); !added) return fail(added.error());
  }
  if (audit) registry.wrap_all([&audit](tools::Tool tool) { return audit->wrap(std::move(tool)); });

  session::ServerConfig config;
  config.session.info = protocol::ServerInfo{"brig", BRIG_VERSION};
  config.session.instructions = sandbox::sandbox_instructions(*sandbox);
  config.session.options.page_size = o.page_size;
  config.session.options.max_outgoing_bytes = o.max_message_bytes;
  config.session.options.max_line_bytes = o.max_line_bytes;
  config.session.options.max_in_flight_calls = o.max_inflight;
  config.stream.send_queue_bytes = o.send_queue_bytes;
  config.stream.budget = std::make_shared<transport::OutputBudget>();
  config.stream.budget->limit = o.send_budget_bytes;
  config.stream.stall_timeout = std::chrono::milliseconds(
      static_cast<std::chrono::milliseconds::rep>(o.stall_timeout_seconds * 1000));
  config.max_connections = o.max_connections;
  config.allow = *allow;
  // A peer brig cannot serve as itself is refused at once, not at its first call.
  config.admit = [&principals](const process::PeerCredentials& peer) -> Result<void> {
    if (auto principal = principals.of(peer); !principal) return std::unexpected(principal.error());
    return {};
  };
  config.instructions_for = [&principals](const process::PeerCredentials& peer) {
    auto principal = principals.of(peer);
    return principal ? sandbox::sandbox_instructions(principal->sandbox) : std::string();
  };

  session::Server server(io, registry, config);
  ServingSummary summary{.version = BRIG_VERSION,
                         .workspace = workspace->path,
                         .policy = o.policy,
                         .socket_path = socket_path,
                         .socket_access = {},
                         .brig_command = brig_command()};
  if (socket_path) {
    auto listener = transport::UnixListener::open(io.get_executor(), *socket_path, *mode);
    if (!listener) return fail(listener.error());
    summary.socket_access =
        fmt::format("mode {:04o}; allowed peers: {}", *mode, config.allow.to_string());
    server.serve_unix(std::move(*listener));
  } else {
    auto stdio = take_client_stdio();
    if (!stdio) return fail(stdio.error());
    // A client that hands brig a socket as stdin has credentials too.
    auto peer = process::peer_credentials(stdio->in.get());
    server.serve_stdio(transport::StdioTransport::create(
        io.get_executor(), std::move(stdio->in), std::move(stdio->out), config.stream, "stdio",
        peer ? std::optional(*peer) : std::nullopt));
  }
  spdlog::info("{}", serving_log_line(summary));
  if (::isatty(STDERR_FILENO) && o.log_level != "off") {
    std::fputs(startup_banner(summary).c_str(), stderr);
  }
  server.run();
  // Jobs that outlived their calls end with the server; their jails must be
  // gone (and reported) before the spawner and the io_context go. SIGKILL
  // ends a jail in milliseconds; the bound keeps exit within about a second.
  principals.stop();
  io.restart();
  auto stopped = asio::co_spawn(io, jobs.stop(std::chrono::milliseconds(500)), asio::use_future);
  while (stopped.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    io.run_one_for(std::chrono::milliseconds(50));
  spdlog::info("stopped");
  return 0;
}

}  // namespace brig::commands
