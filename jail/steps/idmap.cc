#include "jail/steps/idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <map>
#include <string_view>

#include "jail/steps/clone.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace brig::jail::idmap {
namespace {

constexpr const char* kChoices =
    "brig runs as root and identity.as_root = \"mapped\" (the default) shows the workspace "
    "keeping its owner only through an idmapped mount, and never falls back to host root; run "
    "the jail with identity.as_root = \"user\" (the command runs as "
    "identity.uid, a root-owned workspace is read-only to it) or, knowingly, "
    "\"dangerously_host_root\" (the jail's uid 0 is host root)";

bool write_all(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  return fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

// The filesystem type and mount point of the mount `fd` is on, from
// mountinfo ("ext4 on /"), or "" when not found. For error messages only.
std::string filesystem_of(int fd) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) != 0 || !(stx.stx_mask & STATX_MNT_ID))
    return "";
  UniqueFd info(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!info) return "";
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(info.get(), buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  const std::string id = std::to_string(stx.stx_mnt_id) + " ";
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (!line.starts_with(id)) continue;
    // id parent major:minor root mount-point options ... - fstype source super
    size_t field = 0, start = 0;
    std::string_view mount_point;
    for (size_t i = 0; i <= line.size() && field < 5; ++i)
      if (i == line.size() || line[i] == ' ') {
        if (field == 4) mount_point = line.substr(start, i - start);
        ++field;
        start = i + 1;
      }
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) return "";
    std::string_view rest = line.substr(dash + 3);
    const std::string_view fstype = rest.substr(0, rest.find(' '));
    return std::string(fstype) + " mounted on " + std::string(mount_point);
  }
  return "";
}

// A user namespace whose uid and gid maps are "<disk> <host> 1": the
// idmapping of a tree whose owner on disk is disk_uid/disk_gid. A child is
// cloned into a new user namespace and waits on a pipe while this process
// (privileged: it may map any host id) writes its maps and opens the
// namespace; the fd keeps the namespace alive after the child exits. Kept
// for the process's life, per mapping: a spawner makes every jail's trees
// with the same few.
Result<int> userns_for(uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid) {
  static std::map<std::array<uint32_t, 4>, UniqueFd> cache;
  const std::array<uint32_t, 4> key = {disk_uid, disk_gid, host_uid, host_gid};
  if (auto it = cache.find(key); it != cache.end()) return it->second.get();

  const std::string mapping = "uid " + std::to_string(disk_uid) + " -> " +
                              std::to_string(host_uid) + ", gid " + std::to_string(disk_gid) +
                              " -> " + std::to_string(host_gid);
  int hold[2];
  if (::pipe2(hold, O_CLOEXEC) != 0)
    return std::unexpected(sys_error("make the idmapping's user namespace", mapping, errno));
  UniqueFd hold_r(hold[0]), hold_w(hold[1]);
  int pidfd_raw = -1;
  const pid_t pid = clone::clone3_with_pidfd(CLONE_NEWUSER, &pidfd_raw);
  if (pid < 0)
    return std::unexpected(
        sys_error("clone3 a process for the idmapping's user namespace", mapping, errno));
  if (pid == 0) {
    // Async-signal-safe only: wait for the launcher to close its end.
    ::close(hold[1]);
    char c;
    while (::read(hold[0], &c, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  UniqueFd pidfd(pidfd_raw);
  hold_r.reset();
  const std::string dir = "/proc/" + std::to_string(pid) + "/";
  Result<int> result = std::unexpected(Error{});
  UniqueFd ns;
  if (!write_all(dir + "uid_map",
                 std::to_string(disk_uid) + " " + std::to_string(host_uid) + " 1\n"))
    result = std::unexpected(sys_error("write the idmapping's uid_map", mapping, errno));
  else if (!write_all(dir + "gid_map",
                      std::to_string(disk_gid) + " " + std::to_string(host_gid) + " 1\n"))
    result = std::unexpected(sys_error("write the idmapping's gid_map", mapping, errno));
  else if (ns.reset(::open((dir + "ns/user").c_str(), O_RDONLY | O_CLOEXEC)); !ns)
    result = std::unexpected(sys_error("open the idmapping's user namespace", mapping, errno));
  hold_w.reset();  // the child exits
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd.get()), &info, WEXITED) !=
             0 &&
         errno == EINTR) {
  }
  if (!ns) return result;
  const int fd = ns.get();
  cache.emplace(key, std::move(ns));
  return fd;
}

std::string reason(int err, int tree_source_fd) {
  std::string fs = filesystem_of(tree_source_fd);
  switch (err) {
    case EINVAL:
      return "the filesystem" + (fs.empty() ? "" : " (" + fs + ")") +
             ", or one mounted below it, does not support idmapped mounts";
    case EPERM:
    case EACCES:
      return "the kernel refused the idmapped mount (brig is not root in the host's user "
             "namespace, or a mount in the tree is idmapped already)";
    case ENOSYS:
      return "this kernel has no idmapped mounts (they need Linux 5.12 or later; tmpfs 6.3)";
    default:
      return "";
  }
}

// The detached, idmapped tree of `host`, or an empty fd when it is missing.
Result<UniqueFd> make_tree(const std::string& host, uint64_t attr, uid_t host_uid, gid_t host_gid,
                           const std::string& what) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS;
  UniqueFd source(
      static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, host.c_str(), &how, sizeof how)));
  if (!source) {
    if (errno == ENOENT) return UniqueFd{};
    Error e = sys_error(what + ": open the source", host, errno);
    if (e.sys_errno == ELOOP)
      e.why +=
          " (a symlink where the plan found none: brig never follows a symlink in a mount path, "
          "since a jail could have planted it)";
    return std::unexpected(std::move(e));
  }
  struct stat st {};
  if (::fstat(source.get(), &st) != 0)
    return std::unexpected(sys_error(what + ": stat the source", host, errno));
  const int userns = BRIG_TRY(userns_for(st.st_uid, st.st_gid, host_uid, host_gid));
  UniqueFd tree(static_cast<int>(
      ::syscall(SYS_open_tree, source.get(), "",
                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE)));
  if (!tree) {
    const int err = errno;
    return std::unexpected(Error{
        what + ": open_tree(OPEN_TREE_CLONE)", host,
        std::string(::strerror(err)) + ": " + reason(err, source.get()) + "; " + kChoices, err});
  }
  mount_attr ma{};
  ma.attr_set = attr | MOUNT_ATTR_IDMAP;
  ma.userns_fd = static_cast<uint64_t>(userns);
  // CRITICAL: the clone joins the peer group of a shared host mount (systemd
  // makes / shared): private, or every mount the jail's init makes inside it
  // (.git read-only, the masks) would propagate to the host.
  ma.propagation = MS_PRIVATE;
  if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof ma) !=
      0) {
    const int err = errno;
    return std::unexpected(Error{
        what + ": mount_setattr(MOUNT_ATTR_IDMAP) mapping its owner (uid " +
            std::to_string(st.st_uid) + ", gid " + std::to_string(st.st_gid) +
            ") to the jail's root (host uid " + std::to_string(host_uid) + ", gid " +
            std::to_string(host_gid) + ")",
        host, std::string(::strerror(err)) + ": " + reason(err, source.get()) + "; " + kChoices,
        err});
  }
  return tree;
}

}  // namespace

Result<std::vector<Tree>> prepare(const mounts::Plan& plan, const Identity& identity) {
  std::vector<Tree> trees;
  for (const mounts::Op& op : plan.ops) {
    if (op.kind != mounts::Op::Kind::attach) continue;
    if (::geteuid() != 0)
      return std::unexpected(Error{op.what, op.host,
                                   "an idmapped bind needs brig to run as root (CAP_SYS_ADMIN in "
                                   "the host's user namespace)",
                                   EPERM});
    Tree t;
    t.child_fd = op.fd;
    t.fd =
        BRIG_TRY(make_tree(op.host, op.attr, identity.outside_uid, identity.outside_gid, op.what));
    trees.push_back(std::move(t));
  }
  return trees;
}

std::string probe(const std::string& path, uid_t host_uid, gid_t host_gid) {
  auto tree = make_tree(path, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, host_uid, host_gid,
                        "idmapped bind of " + path);
  if (!tree) return tree.error().to_string();
  if (!*tree) return path + ": " + ::strerror(ENOENT);
  return "";
}

}  // namespace brig::jail::idmap
