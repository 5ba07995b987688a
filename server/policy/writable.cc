#include "server/policy/writable.h"

#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "server/policy/expand.h"

namespace brig::policy {
namespace {

std::vector<std::string> writable_roots(const jail::JailSpec& spec) {
  std::vector<std::string> writable;
  if (!spec.namespaces.mount) return spec.landlock.read_write;
  for (const jail::Mount& m : spec.mounts)
    if (m.kind == jail::Mount::Kind::bind && m.writable) writable.push_back(m.source);
  return writable;
}

// writable_roots() and the real paths of those that are host symlinks: a
// path written through its link is just as writable.
std::vector<std::string> writable_real_roots(const jail::JailSpec& spec) {
  std::vector<std::string> writable = writable_roots(spec);
  // A writable path that is a host symlink (read_write = ["~/data"] with
  // ~/data -> /srv/data) is written through its real path, as the mount
  // planner binds it: a policy file there is just as writable.
  for (size_t i = 0, n = writable.size(); i < n; ++i) {
    char real[PATH_MAX];
    if (::realpath(writable[i].c_str(), real) != nullptr && writable[i] != real)
      writable.emplace_back(real);
  }
  return writable;
}

}  // namespace

Result<void> refuse_writable_policy_files(const std::vector<std::string>& files,
                                          const jail::JailSpec& spec) {
  const std::vector<std::string> writable = writable_real_roots(spec);
  for (const std::string& file : files) {
    for (const std::string& root : writable) {
      if (!is_within(file, root)) continue;
      return std::unexpected(Error{
          "check the policy file", file,
          fmt::format("the jail it governs could rewrite it ({} is writable in that jail), and "
                      "the next run would obey what a command wrote; keep policy files outside "
                      "the workspace and every read_write path, e.g. in ~/.config/brig/",
                      root)});
    }
  }
  return {};
}

Result<void> refuse_writable_audit_log(const std::string& path, const jail::JailSpec& spec) {
  // As named, and as its directory's real path (the file may not exist yet;
  // the name may hold "..").
  char real[PATH_MAX];
  std::vector<std::string> names = {path};
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
  if (slash != std::string::npos && ::realpath(dir.c_str(), real) != nullptr)
    names.push_back((std::string(real) == "/" ? "" : std::string(real)) + path.substr(slash));
  for (const std::string& name : names)
    for (const std::string& root : writable_real_roots(spec)) {
      if (!is_within(name, root)) continue;
      return std::unexpected(
          Error{"open the audit log", path,
                fmt::format("the jails it records could rewrite or truncate it ({} is writable in "
                            "them); keep it outside the workspace and every read_write path",
                            root)});
    }
  return {};
}

std::vector<std::string> weak_hidden_paths(const jail::JailSpec& spec) {
  std::vector<std::string> weak;
  // Real paths on both sides: a writable bind reached through a symlink
  // shows the hidden file just the same.
  const std::vector<std::string> writable = writable_real_roots(spec);
  for (const jail::Mount& m : spec.mounts) {
    if (m.kind != jail::Mount::Kind::mask) continue;
    char real[PATH_MAX];
    std::vector<std::string> names = {m.target};
    if (::realpath(m.target.c_str(), real) != nullptr && m.target != real) names.emplace_back(real);
    bool named = false;
    for (const std::string& name : names) {
      for (const std::string& root : writable) {
        if (named || name == root || !is_within(name, root)) continue;
        weak.push_back(fmt::format("{} (under the writable {})", m.target, root));
        named = true;
      }
    }
    // A read-only tree that keeps its owner (the workspace as root) is an
    // idmapped mount attached whole: the mount planner cannot make the
    // snapshots that hold a hidden path against the host's later changes.
    for (const jail::Mount& k : spec.mounts) {
      if (named || k.kind != jail::Mount::Kind::bind || !k.keep_owner || k.writable ||
          m.target == k.source || !is_within(m.target, k.source))
        continue;
      weak.push_back(
          fmt::format("{} (in {}, which keeps its owner: masked as it is when the jail is planned)",
                      m.target, k.source));
      named = true;
    }
  }
  return weak;
}

}  // namespace brig::policy
