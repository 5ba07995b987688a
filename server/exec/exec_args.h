// ExecArgs: the `exec` tool's arguments, checked and with defaults applied,
// and the plan that turns them into one jail: the JailSpec (the policy's,
// with the call's timeout) and the ExecRequest (argv, environment, cwd).
// Pure: no I/O; the jail itself checks what only the kernel can (whether the
// cwd exists, symlinks).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jail/base/error.h"
#include "jail/spec.h"
#include "protocol/json_rpc.h"
#include "protocol/tool_args.h"
#include "server/policy/context.h"
#include "server/policy/policy.h"

namespace brig::exec {

// A `command` string runs as `/bin/sh -c COMMAND`: policies name no shell,
// and /bin/sh is the one every image and every jail has.
inline constexpr const char* kShell = "/bin/sh";

inline constexpr std::size_t kDefaultMaxOutput = 32 * 1024;
// A reply holds each stream once (in the text block), and JSON escapes a
// control byte to 6: 2 x 256 KiB x 6 stays well under the 10 MiB that
// clients accept. Also well within a Spool's kept tail.
inline constexpr std::size_t kMaxMaxOutput = 256 * 1024;
// exec's and job's max_output.
inline constexpr protocol::IntegerArg kMaxOutputArg{"max_output", 1, kMaxMaxOutput,
                                                    kDefaultMaxOutput};
// command (or argv), env and cwd together: they travel to the spawner in one
// packet of 64 KiB (server/spawner/messages.h) with the jail's spec, which
// takes the rest. stdin has no such limit (it goes as a memfd).
inline constexpr std::size_t kMaxCommandBytes = 32 * 1024;
inline constexpr std::chrono::milliseconds kDefaultYieldAfter{20'000};
inline constexpr std::chrono::milliseconds kMaxYieldAfter{300'000};

struct ExecArgs {
  std::vector<std::string> argv;  // what runs: argv, or kShell -c command
  std::string display;            // the command as the caller wrote it, for job lists
  std::optional<std::string> cwd;
  std::vector<std::pair<std::string, std::string>> env;  // added over the policy's
  std::optional<std::string> stdin_text;
  bool stdin_open = false;
  std::optional<std::chrono::milliseconds> timeout;
  std::size_t max_output = kDefaultMaxOutput;
  std::chrono::milliseconds yield_after = kDefaultYieldAfter;
};

// args (already valid against the tool's input schema) as ExecArgs; fails
// with a message for the model (both or neither of command and argv, a bad
// environment name, command, env and cwd over kMaxCommandBytes, ...).
Result<ExecArgs> parse_exec_args(const protocol::Json& args);

// `cwd` (a name as the file tools show it, server/files/utf8.h, decoded
// unless it is the workspace itself) made absolute (relative to the
// workspace) and normalized, checked to
// lie in the jail's view: under a mount of spec and not under a path the
// policy hides. Fails with what the jail does see.
Result<std::string> resolve_cwd(const std::string& cwd, const std::string& workspace,
                                const jail::JailSpec& spec);

// Variables every exec gets, because a jailed command has no terminal and
// no one to answer a prompt: editors and pagers that return at once.
std::vector<std::pair<std::string, std::string>> non_interactive_env();

struct ExecPlan {
  jail::JailSpec spec;
  jail::ExecRequest request;  // stdio fds left at -1 for the launcher
};

// The jail for args: `base` (the policy's spec) with wall_time lowered to the
// call's timeout; the environment of the policy, then non_interactive_env()
// (except where the policy's environment.set names the variable), then
// args.env.
Result<ExecPlan> plan_exec(const policy::Policy& policy, const policy::Context& ctx,
                           const jail::JailSpec& base, const ExecArgs& args);

}  // namespace brig::exec
