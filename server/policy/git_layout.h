// Where the workspace's git metadata lives, found on the host before the
// jail is planned (the planner itself does no I/O). Code planted in hooks/ or
// config (core.hooksPath, core.fsmonitor, aliases) would run OUTSIDE the jail
// the next time someone runs git in the workspace, so to_jail_spec() keeps
// them read-only.
#pragma once

#include <string>

namespace brig::policy {

struct GitLayout {
  enum class Kind {
    none,       // no .git (or a symlink, which a mount cannot pin: left unprotected)
    directory,  // an ordinary repository: .git is a directory
    file,       // a linked worktree or submodule: .git is a "gitdir: <path>" file
  };
  Kind kind = Kind::none;
  std::string dot_git;  // <workspace>/.git; empty when kind is none
  // The git directory .git leads to, and the repository's common directory
  // (hooks, config, objects); the same for a directory. For a file, both are
  // set only when the worktree checks out: the gitdir's own "gitdir" file
  // points back at this .git. Empty = unverified: nothing outside the
  // workspace is bound for git.
  std::string gitdir;
  std::string commondir;
  // core.hooksPath from the common config, made absolute; empty = unset.
  std::string hooks_path;
  friend bool operator==(const GitLayout&, const GitLayout&) = default;
};

// Inspects `workspace` (absolute, canonical). Never fails: what cannot be
// read counts as absent or unverified.
GitLayout find_git_layout(const std::string& workspace);

}  // namespace brig::policy
