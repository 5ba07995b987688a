#include "jail/steps/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "jail/base/unique_fd.h"

namespace brig::jail::userns {
namespace {

Result<void> write_file(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return std::unexpected(sys_error("open user namespace map", path, errno));
  // The kernel takes a map in a single write() only.
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return std::unexpected(sys_error("write user namespace map \"" + text + "\"", path, errno));
  return {};
}

}  // namespace

Result<void> write_maps_from_parent(pid_t pid, const Identity& id, bool allow_setgroups) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/";
  // An unprivileged gid_map write needs setgroups denied (so a jail can never
  // shed a group that denies it access). A privileged launcher allows it
  // once, so the child can drop the launcher's own supplementary groups
  // (root's, which would otherwise follow the jail into an unprivileged uid).
  BRIG_TRY_VOID(write_file(dir + "setgroups", allow_setgroups ? "allow" : "deny"));
  // A privileged launcher whose own ids the identity does not map (root
  // running the jail as an unprivileged host user) maps them to themselves
  // as well: the init keeps them to build the jail (an unmapped uid cannot
  // even create a directory) and the command switches to the identity.
  const uid_t euid = ::geteuid();
  const gid_t egid = ::getegid();
  std::string uids = std::to_string(id.inside_uid) + " " + std::to_string(id.outside_uid) + " 1\n";
  std::string gids = std::to_string(id.inside_gid) + " " + std::to_string(id.outside_gid) + " 1\n";
  // Without map_launcher, only the jail's ids: no process of the jail can
  // ever be host root (the init takes the jail's root first, contain.cc).
  if (allow_setgroups && id.map_launcher && id.outside_uid != euid) {
    if (id.inside_uid == euid)
      return std::unexpected(Error{"map the jail's uid", std::to_string(id.inside_uid),
                                   "the launcher's own uid inside must map to itself", EINVAL});
    uids += std::to_string(euid) + " " + std::to_string(euid) + " 1\n";
  }
  if (allow_setgroups && id.map_launcher && id.outside_gid != egid) {
    if (id.inside_gid == egid)
      return std::unexpected(Error{"map the jail's gid", std::to_string(id.inside_gid),
                                   "the launcher's own gid inside must map to itself", EINVAL});
    gids += std::to_string(egid) + " " + std::to_string(egid) + " 1\n";
  }
  BRIG_TRY_VOID(write_file(dir + "uid_map", uids));
  BRIG_TRY_VOID(write_file(dir + "gid_map", gids));
  return {};
}

}  // namespace brig::jail::userns
