#include "server/tools/denial.h"

#include <cerrno>
#include <vector>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "server/policy/expand.h"
#include "server/policy/to_jail_spec.h"

namespace brig::tools {
namespace {

using policy::PathRule;
using policy::WorkspaceAccess;

// A policy path as its author would have written it: "~/.ssh" for a path in
// the caller's home.
std::string shown(const DenialContext& ctx, const std::string& path) {
  if (!ctx.home.empty() && ctx.home != "/" && is_within(path, ctx.home)) {
    return "~" + path.substr(ctx.home.size());
  }
  return path;
}

// The longest rule in `rules` that contains path; nullptr if none.
const PathRule* containing(const std::vector<PathRule>& rules, const std::string& path) {
  const PathRule* best = nullptr;
  for (const PathRule& r : rules) {
    if (is_within(path, r.path) && (best == nullptr || r.path.size() > best->path.size()))
      best = &r;
  }
  return best;
}

bool is_refusal(int err) {
  return err == EACCES || err == EPERM || err == EROFS;
}

}  // namespace

std::optional<std::string> jail_private_refusal(const DenialContext& ctx,
                                                std::string_view raw_path) {
  const policy::Filesystem& fs = ctx.policy.filesystem;
  const std::string path = *normalize(absolute_from(ctx.workspace, raw_path), DotDot::resolve);
  if (is_within(path, ctx.workspace) || containing(fs.read_write, path) != nullptr ||
      containing(fs.read_only, path) != nullptr)
    return std::nullopt;
  // A hidden path is not there at all; explain_denial() says so after the
  // worker fails on it.
  for (const std::string& h : fs.hidden)
    if (is_within(path, h)) return std::nullopt;
  const std::string name = ctx.policy_name.empty() ? "in use" : ctx.policy_name;
  std::string tree;
  if (fs.private_home && !ctx.home.empty() && ctx.home != "/" && is_within(path, ctx.home)) {
    tree = fmt::format(
        "your home, which policy {} replaces with a private, empty directory in each jail "
        "(filesystem.private_home = true; to see the host's file there, a policy must list it in "
        "filesystem.read_only or filesystem.read_write)",
        name);
  } else if (is_within(path, "/tmp") || is_within(path, "/dev/shm")) {
    tree = fmt::format("{}, which each jail has to itself (policy {})",
                       is_within(path, "/tmp") ? "/tmp" : "/dev/shm", name);
  } else {
    return std::nullopt;
  }
  return fmt::format(
      "{} is in {}. exec's commands get an empty one of their own, so they would not see what "
      "the file tools read or write there, nor the file tools what exec leaves there; the file "
      "tools refuse it. Use a path in the workspace ({}), which both see.",
      path, tree, ctx.workspace);
}

std::optional<std::string> explain_denial(const DenialContext& ctx, std::string_view raw_path,
                                          Access access, int err) {
  const policy::Filesystem& fs = ctx.policy.filesystem;
  const std::string path = *normalize(absolute_from(ctx.workspace, raw_path), DotDot::resolve);
  const std::string name = ctx.policy_name.empty() ? "in use" : ctx.policy_name;

  // Whatever failed on a hidden path, the mask caused it, and its errno
  // need not say so: a hidden file is /dev/null in the jail (read_file
  // refuses a character device, EINVAL), a hidden directory is empty.
  for (const std::string& h : fs.hidden) {
    if (!is_within(path, h)) continue;
    return fmt::format(
        "{} is hidden by policy {}: filesystem.hidden contains \"{}\", so it does not exist in "
        "the jail. Only a policy whose filesystem.hidden omits that entry (a list there replaces "
        "the inherited one) could show it.",
        path, name, shown(ctx, h));
  }
  if (ctx.host_root && !ctx.policy.identity.dangerously_unmask_root_secrets) {
    for (const char* secret : policy::kRootSecrets) {
      if (!is_within(path, secret)) continue;
      return fmt::format(
          "{} is masked because brig runs as root and the jail's root is host root (policy {}: "
          "identity.as_root = \"dangerously_host_root\", "
          "identity.dangerously_unmask_root_secrets = false). Run brig as an ordinary user, or "
          "use identity.as_root = \"mapped\" (the default) or \"user\".",
          path, name);
    }
  }
  if (!is_refusal(err) && err != ENOENT && err != ENOTDIR) return std::nullopt;

  const bool in_workspace = is_within(path, ctx.workspace);
  const PathRule* rw = containing(fs.read_write, path);
  const PathRule* ro = containing(fs.read_only, path);
  const bool in_home =
      fs.private_home && !ctx.home.empty() && ctx.home != "/" && is_within(path, ctx.home);
  const bool jail_own =
      is_within(path, "/tmp") || is_within(path, "/proc") || is_within(path, "/dev");

  if (access == Access::write && is_refusal(err)) {
    if (in_workspace) {
      if (fs.workspace == WorkspaceAccess::read_only) {
        return fmt::format(
            "{} is in the workspace, which policy {} makes read-only (filesystem.workspace = "
            "\"read_only\"). A policy with filesystem.workspace = \"read_write\" (such as "
            "default) allows writes.",
            path, name);
      }
      const std::string git = ctx.workspace + "/.git";
      if (!fs.dangerously_writable_git && is_within(path, git)) {
        return fmt::format(
            "{} is read-only to the file tools: policy {} keeps the workspace's .git from "
            "being written except by git itself in exec (filesystem.dangerously_writable_git = "
            "false), because git on the host would obey what a jail wrote there (hooks, config, "
            "commondir) outside the jail. Run the git command that makes this change with exec, "
            "or use a policy with dangerously_writable_git = true.",
            path, name);
      }
      return std::nullopt;
    }
    if (rw != nullptr || in_home || jail_own) return std::nullopt;
    if (ro != nullptr) {
      return fmt::format(
          "{} is read-only in the jail: policy {} lists \"{}\" in filesystem.read_only. To "
          "allow writes, a policy must list it (or a directory containing it) in "
          "filesystem.read_write.",
          path, name, shown(ctx, ro->path));
    }
    std::string writable;
    for (const PathRule& r : fs.read_write) writable += fmt::format(", \"{}\"", shown(ctx, r.path));
    return fmt::format(
        "{} is not under any read_write path of policy {} (writable: {}/tmp{}{}){}. To allow "
        "writes, add it (or a directory containing it) to filesystem.read_write.",
        path, name, fs.workspace == WorkspaceAccess::read_write ? "the workspace, " : "",
        fs.private_home ? ", the private home" : "", writable,
        fs.workspace == WorkspaceAccess::read_only
            ? fmt::format("; the workspace is read-only in policy {}", name)
            : "");
  }

  if (in_workspace || rw != nullptr || ro != nullptr) return std::nullopt;
  // The private home is mounted over the home's path wherever it lies, even
  // under /tmp, so it explains a missing file before /tmp does.
  if (in_home) {
    return fmt::format(
        "{} is in your home, which policy {} replaces with a private, empty directory in the "
        "jail (filesystem.private_home = true). To see it, add it to filesystem.read_only or "
        "filesystem.read_write.",
        path, name);
  }
  if (is_within(path, "/tmp") && !is_within(ctx.workspace, path)) {
    return fmt::format(
        "{} is in /tmp, which is private to each jail: host files there are not visible "
        "(policy {}). To share it, add it (or a directory containing it) to "
        "filesystem.read_only or filesystem.read_write, or use a workspace that contains it.",
        path, name);
  }
  if (jail_own) return std::nullopt;
  // Ancestors of bound paths exist in the jail as empty directories.
  const auto is_ancestor = [&](const std::string& bound) { return is_within(bound, path); };
  if (is_ancestor(ctx.workspace)) return std::nullopt;
  for (const auto* rules : {&fs.read_only, &fs.read_write}) {
    for (const PathRule& r : *rules)
      if (is_ancestor(r.path)) return std::nullopt;
  }
  return fmt::format(
      "{} is outside the jail of policy {}: only the workspace, /tmp and the paths in "
      "filesystem.read_only and filesystem.read_write exist there. To allow it, add it (or a "
      "directory containing it) to filesystem.read_only or filesystem.read_write.",
      path, name);
}

}  // namespace brig::tools
