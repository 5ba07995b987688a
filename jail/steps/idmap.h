// Idmapped trees for the binds that keep their owner (Mount::keep_owner),
// made by a root launcher before clone, in the host's user namespace:
// open_tree(OPEN_TREE_CLONE | AT_RECURSIVE) of the host path, then one
// mount_setattr that sets the bind's flags and MOUNT_ATTR_IDMAP with a user
// namespace whose maps are "<owner on disk> <jail's host id> 1", for uids
// and gids. The owner's files then appear owned by the jail's root, and
// what the jail creates lands on disk owned by the owner. The child attaches
// each detached tree with move_mount (mounts.h, Op::Kind::attach).
//
// A kernel or filesystem that refuses the idmapped mount fails the jail,
// saying which, where and what to do: nothing falls back to showing the tree
// some other way (host root, or an owner the jail cannot write as).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "jail/spec.h"
#include "jail/steps/mounts.h"

namespace brig::jail::idmap {

// A tree for one attach op: `fd` goes to `child_fd` in the child. An empty
// fd: the source is missing (the child reports ENOENT, or skips an
// optional op).
struct Tree {
  int child_fd = -1;
  UniqueFd fd;
};

// One tree per attach op of `plan`, in plan order, mapped to `identity`'s
// outside ids. The host path is opened with RESOLVE_NO_SYMLINKS (a symlink
// planted since the plan fails with ELOOP). Needs CAP_SYS_ADMIN in the
// host's user namespace (a root launcher). Fails with the op, the path and
// the reason; an unsupported filesystem names it and the policy's choices.
Result<std::vector<Tree>> prepare(const mounts::Plan& plan, const Identity& identity);

// What brig doctor says: whether this process can make an idmapped tree of
// `path` keeping its owner as `host_uid`/`host_gid` (made and dropped,
// never attached). Empty on success, else the reason.
std::string probe(const std::string& path, uid_t host_uid, gid_t host_gid);

}  // namespace brig::jail::idmap
