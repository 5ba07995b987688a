// File-system primitives for the jail's child, shared by the mount plan and
// the git state layer: raw syscalls only (async-signal-safe, no allocation).
// Every path is opened with openat2(RESOLVE_NO_SYMLINKS) and mounts are made
// by file descriptor, so a component a jail swapped for a symlink fails with
// ELOOP instead of taking a mount somewhere else.
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace brig::jail::child_fs {

// Closes an fd at scope exit.
struct ScopedFd {
  explicit ScopedFd(int f) : fd(f) {}
  int fd;
  ~ScopedFd() {
    if (fd >= 0) ::close(fd);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
};

// openat2 with RESOLVE_NO_SYMLINKS (and `resolve` added), O_CLOEXEC: the
// fd, or -errno.
inline int open_exact(int dir_fd, const char* path, uint64_t flags, uint64_t resolve = 0) {
  open_how how{};
  how.flags = O_CLOEXEC | flags;
  how.resolve = RESOLVE_NO_SYMLINKS | resolve;
  const int fd = static_cast<int>(::syscall(SYS_openat2, dir_fd, path, &how, sizeof how));
  return fd >= 0 ? fd : -errno;
}

// A copy of the tree at `from` (recursive or not) with `attr` set before it
// is attached on `to`: the jail never sees it with other flags, not even for
// an instant. Returns 0 or an errno.
inline int attach_copy(int from, int to, uint64_t attr, bool recursive) {
  const unsigned rec = recursive ? AT_RECURSIVE : 0;
  const ScopedFd tree{static_cast<int>(::syscall(
      SYS_open_tree, from, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rec))};
  if (tree.fd < 0) return errno;
  mount_attr ma{};
  ma.attr_set = attr;
  if (::syscall(SYS_mount_setattr, tree.fd, "", AT_EMPTY_PATH | rec, &ma, sizeof ma) != 0 ||
      ::syscall(SYS_move_mount, tree.fd, "", to, "",
                MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
    return errno;
  return 0;
}

// mount(2) on an opened directory: the mount lands on the directory the fd
// holds (through the cwd), not on whatever its path names by now.
inline int mount_on(int dir_fd, const char* source, const char* fstype, unsigned long flags,
                    const char* data) {
  if (::fchdir(dir_fd) != 0) return errno;
  const int err = ::mount(source, ".", fstype, flags, data) == 0 ? 0 : errno;
  return ::chdir("/") == 0 ? err : errno;
}

// Calls fn(name) for each entry of the directory `dir` but "." and "..",
// listed with getdents64 into a buffer on the stack (readdir allocates).
// Stops at fn's first nonzero return. Returns 0, that value, or an errno.
template <typename Fn>
int for_each_name(int dir, Fn fn) {
  const ScopedFd list{open_exact(dir, ".", O_RDONLY | O_DIRECTORY)};
  if (list.fd < 0) return -list.fd;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, list.fd, buf, sizeof buf);
    if (n < 0) return errno;
    if (n == 0) return 0;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const dirent64*>(buf + off);
      off += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      if (int e = fn(name)) return e;
    }
  }
}

}  // namespace brig::jail::child_fs
