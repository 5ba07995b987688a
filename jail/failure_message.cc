#include "jail/failure_message.h"

#include <errno.h>
#include <string.h>

namespace brig::jail {
namespace {

// The failed step's input: the op, hierarchy or entry the index names.
std::string failed_input(const ChildPlan& p, const cgroups::Group& group, const StatusRecord& r,
                         const std::string& argv0) {
  const auto step = static_cast<SetupStep>(r.step);
  const auto i = static_cast<size_t>(r.index);
  switch (step) {
    case SetupStep::mount:
      if (r.index >= 0 && i < p.mounts->ops.size()) return p.mounts->ops[i].what;
      break;
    case SetupStep::cgroup:
      if (r.index >= 0 && i < group.paths.size()) return "join cgroup " + group.paths[i];
      break;
    case SetupStep::rlimit:
      if (r.index >= 0 && i < p.rlimits.size())
        return "setrlimit " + std::to_string(p.rlimits[i].resource) + " to " +
               std::to_string(p.rlimits[i].value.rlim_cur);
      break;
    case SetupStep::chdir:
      return "chdir " + p.cwd;
    case SetupStep::exec: {
      std::string what = "execve " + argv0;
      if (p.exec.candidates.size() > 1 || p.exec.candidates[0] != argv0)
        what += " (searched the jail's PATH)";
      return what;
    }
    default:
      break;
  }
  return step_name(step);
}

}  // namespace

std::string git_warning(const StatusRecord& r) {
  std::string w;
  if (r.git_fallback != 0)
    w = std::string(
            "the workspace's .git was read-only as a whole in this jail: the kernel "
            "refused the private layer git's state files need (overlayfs: ") +
        std::strerror(r.git_fallback) + "), so git could read but not commit";
  if (r.git_unsaved > 0)
    w = std::to_string(r.git_unsaved) +
        " of the changes the command made in the workspace's .git could not be written back: "
        "git itself would not write them (an index with paths outside the worktree, hidden "
        "entries or a split index; HEAD deleted or not a ref; a symlink, fifo or oddly named "
        "file in objects/, refs/ or logs/; a loose object that is not what its id says; a "
        "replace ref), or they were in a pack (git gc or a large fetch: run git gc on the host "
        "instead); after a pack or a refused object, no ref, HEAD or index came back either, "
        "since they could name what did not; or another git held the lock for over half a second "
        "(docs/jail.md, "
        "\"git\")";
  return w;
}

std::string describe_failure(const ChildPlan& p, const cgroups::Group& group, const StatusRecord& r,
                             const std::string& argv0) {
  const auto step = static_cast<SetupStep>(r.step);
  const std::string what = failed_input(p, group, r, argv0);
  std::string why = ::strerror(r.sys_errno);
  if (step == SetupStep::mount && r.sys_errno == ELOOP)
    why +=
        " (a symlink where the plan found none: brig never follows a symlink in a mount path, "
        "since a jail could have planted it)";
  if (step == SetupStep::mount && r.sys_errno == EACCES && p.init_takes_ids)
    why += " (the jail is built as its own root, host uid " + std::to_string(p.host_uid) +
           ", which may not search a directory on this path, like a 0700 /root: make the path "
           "reachable to that uid, leave it out of the policy, or choose identity.as_root = "
           "\"user\" or, knowingly, \"dangerously_host_root\")";
  return what + ": " + why;
}

}  // namespace brig::jail
