#include "server/commands/run.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "jail/launcher.h"
#include "jail/steps/cgroups.h"
#include "server/commands/workspace.h"
#include "server/egress/pins.h"
#include "server/egress/relay.h"
#include "server/llm/placeholder.h"
#include "server/llm/proxy.h"
#include "server/policy/caller.h"
#include "server/policy/llm_routes.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"
#include "server/policy/units.h"
#include "server/policy/writable.h"
#include "server/process/self_exe.h"

namespace brig::commands {
namespace {

// As env(1) and timeout(1) do: 125 means the runner failed, not the command.
constexpr int kRunnerFailed = 125;

// run's options that take a value as the next argument.
constexpr std::string_view kValueOptions[] = {"--policy", "--workspace", "--timeout"};

int run_failed(const std::string& why) {
  fmt::print(stderr, "brig run: {}\n", why);
  return kRunnerFailed;
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run one command in a fresh jail, with this terminal's stdin, stdout and stderr:\n"
      "  brig run [OPTIONS] [--] CMD ARGS...");
  cmd->add_option("--policy", o.policy,
                  "A shipped policy (default, strict, dev) or a TOML file with a '/' or .toml")
      ->capture_default_str();
  cmd->add_option("--workspace", o.workspace,
                  "The directory the command may work in (default: the current directory)");
  cmd->add_option("--timeout", o.timeout,
                  "Kill the whole jail after this long (\"30s\", \"10m\"); overrides the "
                  "policy's wall_time");
  cmd->footer(
      "Exit status: the command's; 128+N when killed by signal N; 124 timed out; "
      "125 brig or the jail failed; 126 not executable; 127 not found.\n");
  return cmd;
}

std::vector<std::string> take_run_command(int* argc, char** argv) {
  if (*argc < 2 || std::string_view(argv[1]) != "run") return {};
  for (int i = 2; i < *argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--" || !arg.starts_with('-')) {
      const int first = arg == "--" ? i + 1 : i;
      std::vector<std::string> command(argv + first, argv + *argc);
      *argc = i;
      return command;
    }
    if (std::find(std::begin(kValueOptions), std::end(kValueOptions), arg) !=
        std::end(kValueOptions))
      ++i;  // its value, even if it starts with '-'
  }
  return {};
}

int run_command(const RunOptions& o) {
  if (o.command.empty()) {
    fmt::print(stderr, "brig run: no command given; write brig run [OPTIONS] [--] CMD ARGS...\n");
    return 2;  // a usage error, as brig's parser reports them
  }

  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) {
    return run_failed(fmt::format("cannot read the current directory: {}", std::strerror(errno)));
  }
  policy::EnvMap env = policy::current_environment();
  const std::string home = policy::caller_home(env);

  auto ws = resolve_workspace(o.workspace, cwd, home);
  if (!ws) return run_failed(ws.error().to_string());
  if (ws->warning) fmt::print(stderr, "brig run: warning: {}\n", *ws->warning);

  auto loaded = policy::load_policy(o.policy, policy::Expansion{home, env});
  if (!loaded) {
    for (const Error& e : loaded.error()) {
      fmt::print(
          stderr, "brig run: {}\n",
          e.what == "invalid policy" ? fmt::format("{}: {}", e.where, e.why) : e.to_string());
    }
    return kRunnerFailed;
  }
  policy::Policy& p = loaded->policy;
  if (o.timeout) {
    auto wall = policy::parse_duration(*o.timeout);
    if (!wall) return run_failed(fmt::format("--timeout: {}", wall.error()));
    if (wall->count() == 0) return run_failed("--timeout must be longer than 0");
    p.limits.wall_time = *wall;
  }

  if (p.network.mode == policy::NetworkMode::filtered) {
    auto warnings = egress::prepare_filtered(p.network.rules);
    if (!warnings) return run_failed(warnings.error().to_string());
    for (const std::string& w : *warnings) fmt::print(stderr, "brig run: warning: {}\n", w);
  }
  policy::Context ctx = policy::caller_context(ws->path, cwd, std::move(env), home);
  // This very program serves `brig connect` in a proxy jail (git over ssh);
  // no other mode looks for it, so `brig run`'s start pays nothing for it.
  if (p.network.mode == policy::NetworkMode::proxy)
    if (auto self = process::find_sibling({"brig"})) ctx.connect_program = *self;
  if (p.network.mode == policy::NetworkMode::filtered)
    if (auto nf = process::find_sibling({"brig-netfilter", "../libexec/brig/brig-netfilter"}))
      ctx.netfilter_program = *nf;
  auto spec = policy::to_jail_spec(p, ctx);
  if (!spec) return run_failed(spec.error().to_string());
  if (auto ok = policy::refuse_writable_policy_files(loaded->files, *spec); !ok)
    return run_failed(ok.error().to_string());
  // LLM routes: every key is loaded now (a missing one refuses the run
  // before any jail exists), and the variables that held them are wiped
  // from this process's environment. The pages holding the keys are zeroed
  // in the jail cloned from this process (llm::Secret).
  std::vector<llm::Secret> keys;
  std::string placeholder;
  if (!p.llm.routes.empty()) {
    auto loaded = llm::load_keys(p.llm.routes, ctx.env);
    llm::forget_key_variables(p.llm.routes, ctx.env);
    llm::forget_key_variables(p.llm.routes);
    if (!loaded) return run_failed(loaded.error().to_string());
    keys = std::move(*loaded);
    auto made = llm::new_placeholder();
    if (!made) return run_failed(made.error().to_string());
    placeholder = std::move(*made);
  }
  jail::ExecRequest request = policy::exec_request(p, ctx, o.command);
  for (auto& [name, value] : policy::llm_environment(p.llm.routes, placeholder)) {
    std::erase_if(request.env, [&](const std::string& e) { return e.starts_with(name + "="); });
    request.env.push_back(name + "=" + value);
  }
  // Under a delegated cgroup v2 scope, the jail's group needs brig in a leaf.
  jail::cgroups::enter_delegated_leaf();
  // A `proxy` jail's listeners are served from this process, outside the
  // jail, for as long as the command runs. Declared before the outcome: the
  // relay's thread goes last.
  std::unique_ptr<egress::Relay> relay;
  std::unique_ptr<llm::Proxy> llm_proxy;
  jail::StartedHook serve_listeners;
  if (!spec->listeners.empty()) {
    serve_listeners = [&relay, &llm_proxy, &keys, &placeholder,
                       &p](jail::RunningJail& jailed) -> Result<void> {
      std::vector<UniqueFd> listeners = jailed.take_listeners();
      if (!p.llm.routes.empty() && !listeners.empty()) {
        // The LLM listener is the last (policy::llm_listener).
        UniqueFd fd = std::move(listeners.back());
        listeners.pop_back();
        llm::ProxyOptions options;
        // A refusal or failure is worth a line of the terminal: the SDK's
        // own error may not say why.
        options.audit = [](const llm::LlmRecord& r) {
          if (!r.error.empty()) fmt::print(stderr, "brig run: llm: {}\n", llm::describe(r));
        };
        auto started = llm::Proxy::start(p.llm.routes, std::move(keys), std::move(options));
        if (!started) {
          Error e = started.error();
          e.step = jail::SetupStep::listen;
          return std::unexpected(std::move(e));
        }
        llm_proxy = std::move(*started);
        llm_proxy->add_jail("brig run", placeholder, std::move(fd));
      }
      if (listeners.empty()) return {};
      egress::RelayOptions options;
      // No audit log here: a refusal is worth a line of the terminal, since
      // the command's own error may not say why.
      options.audit = [](const egress::EgressRecord& r) {
        if (!r.allowed) fmt::print(stderr, "brig run: network: {}\n", egress::describe(r));
      };
      auto started = egress::Relay::start(std::move(options));
      if (!started) {
        Error e = started.error();
        e.step = jail::SetupStep::listen;
        return std::unexpected(std::move(e));
      }
      relay = std::move(*started);
      relay->add_jail("brig run", p.network.rules, egress::jail_listeners(std::move(listeners)));
      return {};
    };
  }
  const jail::Outcome outcome = jail::run(*spec, request, serve_listeners);
  if (!outcome.warning.empty()) fmt::print(stderr, "brig run: warning: {}\n", outcome.warning);

  switch (outcome.kind) {
    case jail::Outcome::Kind::exited:
    case jail::Outcome::Kind::signaled:
      break;
    case jail::Outcome::Kind::timed_out:
      fmt::print(stderr, "brig run: timed out{}; the whole jail was killed\n",
                 p.limits.wall_time ? " after " + policy::format_duration(*p.limits.wall_time)
                                    : std::string());
      break;
    case jail::Outcome::Kind::setup_failed:
      fmt::print(stderr, "brig run: {}\n", outcome.to_string());
      break;
  }
    // Nothing is left to do but free memory, which the kernel does anyway:
    // the destructors would fault back in much of the code the launcher
    // dropped while the jail ran (~35 page faults, ~0.1 ms before the exit
    // status). LeakSanitizer, which runs at exit, still checks sanitizer builds.
#ifndef __SANITIZE_ADDRESS__
  std::fflush(nullptr);
  ::_exit(outcome.exit_status());
#endif
  return outcome.exit_status();
}

}  // namespace brig::commands
