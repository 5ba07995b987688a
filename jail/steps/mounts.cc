#include "jail/steps/mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <set>

namespace brig::jail::mounts {
namespace {

constexpr const char* kOld = "/oldroot";
constexpr const char* kNew = "/newroot";

// /proc entries a container runtime makes read-only or masks when the jail's
// root is host root: writable, they reach the host kernel (core_pattern is a
// root shell on the host).
constexpr const char* kProcReadOnly[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
constexpr const char* kProcMasked[] = {"kcore",       "keys",          "timer_list", "timer_stats",
                                       "sched_debug", "latency_stats", "acpi",       "asound",
                                       "scsi",        "interrupts"};
constexpr const char* kDevices[] = {"null", "zero", "full", "random", "urandom", "tty"};

class RealHost final : public HostView {
 public:
  Type type(const std::string& path) const override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return Type::missing;
    if (S_ISLNK(st.st_mode)) return Type::symlink;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return Type::device;
    return S_ISDIR(st.st_mode) ? Type::dir : Type::file;
  }
  std::optional<std::string> resolve(const std::string& path) const override {
    char buf[PATH_MAX];
    if (!::realpath(path.c_str(), buf)) return std::nullopt;
    return std::string(buf);
  }
  std::optional<std::string> link_text(const std::string& path) const override {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    if (n < 0 || n == sizeof buf) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  }
};

bool is_within(const std::string& child, const std::string& parent) {
  if (parent == "/") return true;
  return child.starts_with(parent) &&
         (child.size() == parent.size() || child[parent.size()] == '/');
}

std::string octal(mode_t mode) {
  char buf[8];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + (mode & 7));
    mode >>= 3;
  } while (mode);
  std::string s = "0";
  while (n) s += buf[--n];
  return s;
}

std::string tmpfs_data(mode_t mode, uint64_t size) {
  std::string d = "mode=" + octal(mode);
  if (size) d += ",size=" + std::to_string(size);
  return d;
}

class Planner {
 public:
  Planner(const JailSpec& spec, const HostView& host) : spec_(spec), host_(host) {}

  Result<Plan> run() {
    if (spec_.mounts.empty()) return Plan{};
    std::string scratch;
    for (const char* d : {"/tmp", "/mnt", "/run", "/var/tmp"})
      if (host_.type(d) == HostView::Type::dir) {
        scratch = d;
        break;
      }
    if (scratch.empty())
      return std::unexpected(
          Error{"plan mounts", "", "no /tmp, /mnt, /run or /var/tmp for the scratch tmpfs", 0});
    add(Op::Kind::make_private, "/", "make / private");
    fs(scratch, "tmpfs", "mode=0755,size=65536", MS_NOSUID | MS_NODEV,
       "scratch tmpfs on " + scratch);
    add(Op::Kind::enter_scratch, scratch, "pivot_root into the scratch tmpfs");
    fs(kNew, "tmpfs", "mode=0755,size=1048576", MS_NOSUID | MS_NODEV, "root tmpfs");
    made_.insert("/");
    for (size_t i = 0; i < spec_.mounts.size(); ++i) plan_one(spec_.mounts[i], i);
    if (error_) return std::unexpected(std::move(*error_));
    add(Op::Kind::enter_root, kNew, "pivot_root into the jail's root, detach the host's");
    add(Op::Kind::set_attr, "/", "make the jail's root read-only").attr = MOUNT_ATTR_RDONLY;
    return std::move(plan_);
  }

 private:
  Op& add(Op::Kind kind, std::string path, std::string what) {
    Op op;
    op.kind = kind;
    op.path = std::move(path);
    op.what = std::move(what);
    plan_.ops.push_back(std::move(op));
    return plan_.ops.back();
  }

  Op& fs(std::string path, const char* type, std::string data, unsigned long flags,
         std::string what) {
    Op& op = add(Op::Kind::mount, std::move(path), std::move(what));
    op.source = type;
    op.data = std::move(data);
    op.flags = flags;
    return op;
  }

  Op& bind(std::string source, std::string path, uint64_t attr, bool recursive, bool optional,
           std::string what) {
    Op& op = add(Op::Kind::bind, std::move(path), std::move(what));
    op.source = std::move(source);
    op.attr = attr;
    op.recursive = recursive;
    op.optional = optional;
    return op;
  }

  void symlink(std::string text, std::string path, std::string what) {
    add(Op::Kind::symlink, std::move(path), std::move(what)).source = std::move(text);
  }

  // mkdir for each not yet made ancestor of `target` (and target itself if `self`).
  void make_dirs(const std::string& target, bool self) {
    size_t pos = 1;
    while (pos <= target.size()) {
      size_t end = target.find('/', pos);
      if (end == std::string::npos) end = target.size();
      const std::string sofar = target.substr(0, end);
      pos = end + 1;
      if (sofar == target && !self) break;
      if (made_.insert(sofar).second)
        add(Op::Kind::mkdir, kNew + sofar, "mkdir " + sofar + " for " + target);
    }
  }

  // Whether another bind puts `host_path` at the same path in the jail.
  bool provided_at_own_path(const std::string& host_path) const {
    for (const Mount& m : spec_.mounts)
      if (m.kind == Mount::Kind::bind && m.source == m.target && is_within(host_path, m.source) &&
          host_.type(m.source) == HostView::Type::dir)
        return true;
    return false;
  }

  // A tmpfs of the spec's belongs to the command's ids. The init that mounts
  // it keeps root's when the command switches to another user (a root brig
  // running the jail as an unprivileged one), and a private home of mode
  // 0700 owned by root would be closed to its own user.
  std::string owned_tmpfs_data(const Mount& m) const {
    std::string d = tmpfs_data(m.mode, m.size_bytes);
    if (spec_.namespaces.user && spec_.identity.inside_uid != 0) {
      d += ",uid=" + std::to_string(spec_.identity.inside_uid) +
           ",gid=" + std::to_string(spec_.identity.inside_gid);
    }
    return d;
  }

  void plan_one(const Mount& m, size_t i) {
    const std::string tag = " (mounts[" + std::to_string(i) + "])";
    const std::string at = kNew + m.target;
    switch (m.kind) {
      case Mount::Kind::bind:
        plan_bind(m, at, tag);
        return;
      case Mount::Kind::tmpfs:
        make_dirs(m.target, true);
        fs(at, "tmpfs", owned_tmpfs_data(m),
           MS_NOSUID | MS_NODEV | (m.writable ? 0ul : static_cast<unsigned long>(MS_RDONLY)),
           "tmpfs on " + m.target + tag);
        return;
      case Mount::Kind::proc:
        plan_proc(m, at, tag);
        return;
      case Mount::Kind::dev:
        plan_dev(m, at, tag);
        return;
      case Mount::Kind::mask:
        add(Op::Kind::mask, at, "mask " + m.target + tag).optional = true;
        return;
    }
  }

  void plan_bind(const Mount& m, const std::string& at, const std::string& tag) {
    const std::string what =
        "bind " + m.source + " on " + m.target + (m.writable ? " read-write" : " read-only") + tag;
    const uint64_t attr = m.writable ? MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
                                     : MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    const auto resolved = host_.resolve(m.source);
    if (!resolved) {
      if (m.optional) return;
      // Left to the child, which reports ENOENT for this op like any other
      // mount failure (and catches a source removed after planning the same way).
      make_dirs(m.target, true);
      bind(kOld + m.source, at, attr, true, false, what);
      return;
    }
    if (m.source == m.target && host_.type(m.source) == HostView::Type::symlink &&
        provided_at_own_path(*resolved)) {
      if (const auto text = host_.link_text(m.source)) {
        make_dirs(m.target, false);
        symlink(*text, at, "symlink " + m.target + " -> " + *text + tag);
        return;
      }
    }
    const bool dir = host_.type(*resolved) == HostView::Type::dir;
    make_dirs(m.target, dir);
    if (!dir) add(Op::Kind::touch, at, "mount point " + m.target + tag);
    bind(kOld + *resolved, at, attr, true, m.optional, what);
  }

  void plan_proc(const Mount& m, const std::string& at, const std::string& tag) {
    make_dirs(m.target, true);
    fs(at, "proc", "", MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc on " + m.target + tag);
    if (spec_.identity.outside_uid != 0) return;
    for (const char* p : kProcReadOnly)
      bind(at + "/" + p, at + "/" + p,
           MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, true, true,
           "read-only " + m.target + "/" + p + tag);
    for (const char* p : kProcMasked)
      add(Op::Kind::mask, at + "/" + p, "mask " + m.target + "/" + p + tag).optional = true;
  }

  void plan_dev(const Mount& m, const std::string& at, const std::string& tag) {
    make_dirs(m.target, true);
    fs(at, "tmpfs", "mode=0755,size=65536", MS_NOSUID | MS_NOEXEC, "tmpfs on " + m.target + tag);
    for (const char* d : kDevices) {
      // A user namespace cannot mknod: the host's device nodes are bound in.
      const std::string node = at + "/" + d;
      add(Op::Kind::touch, node, "mount point " + m.target + "/" + d + tag);
      bind(std::string(kOld) + "/dev/" + d, node, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false,
           true, "bind /dev/" + std::string(d) + " on " + m.target + "/" + d + tag);
    }
    for (const Device& d : m.devices) plan_device(d, m.target, tag);
    add(Op::Kind::mkdir, at + "/pts", "mkdir " + m.target + "/pts" + tag);
    fs(at + "/pts", "devpts", "newinstance,ptmxmode=0666,mode=0620", MS_NOSUID | MS_NOEXEC,
       "devpts on " + m.target + "/pts" + tag);
    symlink("pts/ptmx", at + "/ptmx", "symlink " + m.target + "/ptmx" + tag);
    add(Op::Kind::mkdir, at + "/shm", "mkdir " + m.target + "/shm" + tag);
    fs(at + "/shm", "tmpfs", tmpfs_data(01777, m.size_bytes), MS_NOSUID | MS_NODEV,
       "tmpfs on " + m.target + "/shm" + tag);
    const std::pair<const char*, const char*> links[] = {{"fd", "/proc/self/fd"},
                                                         {"stdin", "/proc/self/fd/0"},
                                                         {"stdout", "/proc/self/fd/1"},
                                                         {"stderr", "/proc/self/fd/2"}};
    for (const auto& [name, text] : links)
      symlink(text, at + "/" + name, "symlink " + m.target + "/" + name + tag);
    add(Op::Kind::set_attr, at, "make " + m.target + " read-only" + tag).attr = MOUNT_ATTR_RDONLY;
  }

  // A policy's extra device (or directory of devices), at the same place
  // under the dev mount. Bound without nodev, like the minimal ones: that is
  // the point. A symlink is followed only to a device or directory inside
  // /dev (/dev/core points at /proc/kcore).
  void plan_device(const Device& d, const std::string& dev_target, const std::string& tag) {
    const std::string target = dev_target + d.path.substr(4);  // "/dev/net/tun" -> "/net/tun"
    const std::string what = "bind device " + d.path + " on " + target + tag;
    const auto resolved = host_.resolve(d.path);
    if (!resolved) {
      if (d.optional) return;
      // Left to the child, which fails with ENOENT naming this op.
      make_dirs(target, false);
      add(Op::Kind::touch, kNew + target, "mount point " + target + tag);
      bind(kOld + d.path, kNew + target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, false, what);
      return;
    }
    const HostView::Type type = host_.type(*resolved);
    if (!is_within(*resolved, "/dev") ||
        (type != HostView::Type::device && type != HostView::Type::dir)) {
      if (!error_)
        error_ = Error{
            "plan mounts", d.path,
            "not a device node or a directory of them under /dev (it is " + *resolved + ")" + tag,
            0};
      return;
    }
    const bool dir = type == HostView::Type::dir;
    make_dirs(target, dir);
    if (!dir) add(Op::Kind::touch, kNew + target, "mount point " + target + tag);
    bind(kOld + *resolved, kNew + target, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false, d.optional,
         what);
  }

  const JailSpec& spec_;
  const HostView& host_;
  std::optional<Error> error_;  // the first device the plan refuses
  Plan plan_;
  std::set<std::string> made_;  // directories (jail paths) already made or planned
};

// --- child side: raw syscalls only ---

int bind(const char* source, const char* target, uint64_t attr, bool recursive) {
  const int fd = static_cast<int>(
      ::syscall(SYS_open_tree, AT_FDCWD, source,
                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0)));
  if (fd < 0) return errno;
  int err = 0;
  mount_attr ma{};
  ma.attr_set = attr;
  // Flags go on the detached copy before it is attached: the jail never sees
  // the tree writable, not even for an instant.
  if (::syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &ma,
                sizeof ma) != 0 ||
      ::syscall(SYS_move_mount, fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) != 0)
    err = errno;
  ::close(fd);
  return err;
}

int set_attr(const char* path, uint64_t attr, bool recursive) {
  mount_attr ma{};
  ma.attr_set = attr;
  return ::syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &ma,
                   sizeof ma) == 0
             ? 0
             : errno;
}

int mask(const char* path) {
  struct stat st;
  if (::stat(path, &st) != 0) return errno;
  if (S_ISDIR(st.st_mode))
    return ::mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "mode=0755,size=4096") == 0
               ? 0
               : errno;
  return bind("/oldroot/dev/null", path, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
              false);
}

int pivot(const char* new_root, const char* put_old) {
  return ::syscall(SYS_pivot_root, new_root, put_old) == 0 ? 0 : errno;
}

int apply_op(const Op& op) {
  const char* path = op.path.c_str();
  switch (op.kind) {
    case Op::Kind::make_private:
      return ::mount(nullptr, path, nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : errno;
    case Op::Kind::mount:
      return ::mount(op.source.c_str(), path, op.source.c_str(), op.flags,
                     op.data.empty() ? nullptr : op.data.c_str()) == 0
                 ? 0
                 : errno;
    case Op::Kind::enter_scratch: {
      if (::chdir(path) != 0) return errno;
      if (::mkdir("newroot", 0755) != 0 || ::mkdir("oldroot", 0755) != 0) return errno;
      if (int e = pivot(".", "oldroot")) return e;
      return ::chdir("/") == 0 ? 0 : errno;
    }
    case Op::Kind::mkdir:
      return ::mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : errno;
    case Op::Kind::touch: {
      const int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd >= 0) {
        ::close(fd);
        return 0;
      }
      // An existing mount point that cannot be opened for writing (a
      // read-only bind, a device) is still a mount point.
      return errno == EROFS || errno == EACCES || errno == EISDIR
                 ? (::access(path, F_OK) == 0 ? 0 : errno)
                 : errno;
    }
    case Op::Kind::symlink:
      return ::symlink(op.source.c_str(), path) == 0 || errno == EEXIST ? 0 : errno;
    case Op::Kind::bind:
      return bind(op.source.c_str(), path, op.attr, op.recursive);
    case Op::Kind::set_attr:
      return set_attr(path, op.attr, op.recursive);
    case Op::Kind::mask:
      return mask(path);
    case Op::Kind::enter_root: {
      if (::chdir(path) != 0) return errno;
      // pivot_root(".", ".") stacks the old root (the scratch tmpfs, with
      // the host's root at /oldroot in it) on top of the new one at "/";
      // detaching "." takes both away at once and leaves only the new root.
      if (int e = pivot(".", ".")) return e;
      if (::umount2(".", MNT_DETACH) != 0) return errno;
      return ::chdir("/") == 0 ? 0 : errno;
    }
  }
  return EINVAL;
}

}  // namespace

const HostView& real_host() {
  static const RealHost host;
  return host;
}

Result<Plan> plan(const JailSpec& spec, const HostView& host) {
  return Planner(spec, host).run();
}

int apply_in_child(const Plan& plan, int* failed_op) {
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    const Op& op = plan.ops[i];
    const int err = apply_op(op);
    if (err == 0 || (op.optional && err == ENOENT)) continue;
    *failed_op = static_cast<int>(i);
    return err;
  }
  return 0;
}

}  // namespace brig::jail::mounts
