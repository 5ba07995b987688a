#include "server/exec/exec_args.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "protocol/text.h"
#include "server/files/utf8.h"
#include "server/policy/to_jail_spec.h"

namespace brig::exec {
namespace {

using protocol::Json;

Error bad_argument(std::string where, std::string why) {
  return Error{"invalid arguments", std::move(where), std::move(why)};
}

bool valid_env_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

// argv as one line a person could paste into a shell.
std::string display_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
                                         "nopqrstuvwxyz0123456789_-./=:,+@%") == std::string::npos;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

void set_env(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  auto it = std::find_if(env.begin(), env.end(),
                         [&](const std::string& e) { return e.starts_with(prefix); });
  if (it != env.end()) {
    *it = prefix + value;
  } else {
    env.push_back(prefix + value);
  }
}

}  // namespace

Result<ExecArgs> parse_exec_args(const Json& args) {
  ExecArgs a;
  const bool has_command = args.contains("command");
  const bool has_argv = args.contains("argv");
  if (has_command == has_argv) {
    return std::unexpected(bad_argument(
        "command, argv", "give exactly one of command (a shell string) and argv (an array)"));
  }
  if (has_command) {
    const std::string command = args.at("command").get<std::string>();
    if (command.empty()) return std::unexpected(bad_argument("command", "is empty"));
    a.argv = {kShell, "-c", command};
    a.display = command;
  } else {
    a.argv = args.at("argv").get<std::vector<std::string>>();
    if (a.argv.empty() || a.argv[0].empty()) {
      return std::unexpected(bad_argument("argv", "argv[0] must name the program to run"));
    }
    a.display = display_argv(a.argv);
  }
  for (const std::string& s : a.argv) {
    if (s.find('\0') != std::string::npos) {
      return std::unexpected(bad_argument(has_command ? "command" : "argv",
                                          "a NUL byte cannot be passed to a program"));
    }
  }
  if (args.contains("cwd")) a.cwd = args.at("cwd").get<std::string>();
  if (args.contains("env")) {
    for (const auto& [name, value] : args.at("env").items()) {
      if (!valid_env_name(name)) {
        return std::unexpected(
            bad_argument("env." + protocol::clip(name, 100),
                         "an environment variable name is letters, digits and _, and does not "
                         "start with a digit"));
      }
      const std::string v = value.get<std::string>();
      if (v.find('\0') != std::string::npos) {
        return std::unexpected(bad_argument("env." + name, "a value cannot hold a NUL byte"));
      }
      a.env.emplace_back(name, v);
    }
  }
  std::size_t bytes = a.cwd ? a.cwd->size() : 0;
  for (const std::string& s : a.argv) bytes += s.size() + 1;
  for (const auto& [name, value] : a.env) bytes += name.size() + value.size() + 2;
  if (bytes > kMaxCommandBytes) {
    return std::unexpected(bad_argument(
        "command, argv, env",
        fmt::format("together take {} bytes; exec takes at most {} bytes ({} KiB). Write a longer "
                    "script to a file in the workspace with write_file and run that, or pass "
                    "the data on stdin, which has no such limit",
                    bytes, kMaxCommandBytes, kMaxCommandBytes / 1024)));
  }
  if (args.contains("stdin")) a.stdin_text = args.at("stdin").get<std::string>();
  a.stdin_open = args.value("stdin_open", false);
  if (args.contains("timeout")) {
    const double t = args.at("timeout").get<double>();
    if (!(t > 0) || !std::isfinite(t)) {
      return std::unexpected(bad_argument("timeout", "must be a number of seconds above 0"));
    }
    a.timeout = std::max(seconds_to_ms(std::min(t, 1e9)), std::chrono::milliseconds(1));
  }
  a.max_output = static_cast<std::size_t>(BRIG_TRY(kMaxOutputArg.read(args)));
  if (args.contains("yield_after")) {
    const double y = args.at("yield_after").get<double>();
    if (!(y >= 0) || y * 1000.0 > static_cast<double>(kMaxYieldAfter.count())) {
      return std::unexpected(bad_argument(
          "yield_after", fmt::format("must be 0 to {} seconds", kMaxYieldAfter.count() / 1000)));
    }
    a.yield_after = seconds_to_ms(y);
  }
  return a;
}

Result<std::string> resolve_cwd(const std::string& cwd, const std::string& workspace,
                                const jail::JailSpec& spec) {
  if (cwd.find('\0') != std::string::npos) {
    return std::unexpected(bad_argument("cwd", "a path cannot hold a NUL byte"));
  }
  // Spelled as the file tools list names (server/files/utf8.h); the
  // workspace (the default) is a host path already.
  const std::optional<std::string> name =
      cwd == workspace ? std::optional(cwd) : files::text_to_name(cwd);
  if (!name) {
    return std::unexpected(
        bad_argument("cwd",
                     "spells as escapes (U+F780..U+F7FF) bytes that form a valid UTF-8 character; "
                     "write that character itself"));
  }
  const std::string path = *normalize(absolute_from(workspace, *name), DotDot::resolve);
  if (spec.mounts.empty()) return path;  // the host's root: everything is in view
  // The deepest mount over path decides; for equal targets the later one
  // (a mask comes after the tree it masks).
  const jail::Mount* over = nullptr;
  for (const jail::Mount& m : spec.mounts) {
    if (is_within(path, m.target) && (over == nullptr || m.target.size() >= over->target.size())) {
      over = &m;
    }
  }
  if (over != nullptr && over->kind == jail::Mount::Kind::mask) {
    return std::unexpected(
        Error{"invalid cwd", files::name_to_text(path),
              fmt::format("{} is hidden by the policy's filesystem.hidden", over->target)});
  }
  if (over == nullptr) {
    std::vector<std::string> seen;
    for (const jail::Mount& m : spec.mounts) {
      if (m.kind == jail::Mount::Kind::bind || m.kind == jail::Mount::Kind::tmpfs) {
        seen.push_back(m.target);
      }
    }
    return std::unexpected(
        Error{"invalid cwd", files::name_to_text(path),
              fmt::format("the jail does not contain it; the workspace is {} and the jail sees {}",
                          workspace, fmt::join(seen, ", "))});
  }
  return path;
}

std::vector<std::pair<std::string, std::string>> non_interactive_env() {
  return {
      {"GIT_EDITOR", "true"}, {"GIT_PAGER", "cat"},         {"PAGER", "cat"},
      {"TERM", "dumb"},       {"GIT_TERMINAL_PROMPT", "0"},
  };
}

Result<ExecPlan> plan_exec(const policy::Policy& policy, const policy::Context& ctx,
                           const jail::JailSpec& base, const ExecArgs& args) {
  ExecPlan plan;
  plan.spec = base;
  if (args.timeout &&
      (!plan.spec.limits.wall_time || *args.timeout < *plan.spec.limits.wall_time)) {
    plan.spec.limits.wall_time = *args.timeout;
  }
  plan.request = policy::exec_request(policy, ctx, args.argv);
  plan.request.cwd = BRIG_TRY(resolve_cwd(args.cwd.value_or(ctx.workspace), ctx.workspace, base));
  for (const auto& [name, value] : non_interactive_env()) {
    if (!policy.environment.set.contains(name)) set_env(plan.request.env, name, value);
  }
  for (const auto& [name, value] : args.env) set_env(plan.request.env, name, value);
  return plan;
}

}  // namespace brig::exec
