// Why the jail refused a path, in the policy's words: which rule refused it
// and how a policy could allow it. Pure: the worker reports the path and
// errno, the server (which knows the policy) explains them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/policy/policy.h"

namespace brig::tools {

// What the explanation needs to know about the jail the worker runs in.
struct DenialContext {
  const policy::Policy& policy;
  std::string policy_name;  // as the operator named it: "strict", or a file path
  std::string workspace;    // absolute and normalized
  std::string home;         // the caller's home; shown as "~"; empty = unknown
  bool host_root = false;   // uid 0 in the jail is host root (root secrets masked)
};

enum class Access { read, write };

// One or two sentences naming the policy rule that refused `path` (absolute,
// or relative to the workspace) for `access` with errno `err`, e.g.
// `filesystem.hidden contains "~/.ssh"`, and what a policy would have to say
// to allow it. Empty when the policy does not explain the error: the path is
// visible and simply missing, or host file permissions refused it. ".." is
// resolved lexically, so a path through a symlink is judged by its spelling.
std::optional<std::string> explain_denial(const DenialContext& ctx, std::string_view path,
                                          Access access, int err);

// Why the file tools refuse `path` (absolute, or relative to the workspace),
// or empty when they take it: a path in /tmp, /dev/shm or, with private_home, in the
// caller's home, outside the workspace and every bound path. Each jail has
// those trees to itself (exec's commands start with empty ones, and the
// file tools' long-lived worker keeps its own), so a file written there by
// write_file would never reach exec, and the reverse: refused, saying so,
// rather than succeeding where nothing else can see it. Lexical, as
// explain_denial is.
std::optional<std::string> jail_private_refusal(const DenialContext& ctx, std::string_view path);

// The file tools' descriptions say it too, so a model need not learn it by
// failing.
inline constexpr std::string_view kJailPrivateNote =
    " Paths in /tmp, /dev/shm or a private home (outside the workspace and the policy's "
    "paths) are refused: each sandbox has its own, so exec would not see them. Share files "
    "with exec through the workspace.";

}  // namespace brig::tools
