#include "jail/steps/git_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <initializer_list>

#include "jail/steps/child_fs.h"

namespace brig::jail::git_state {
namespace {

using child_fs::ScopedFd;

constexpr uint64_t kReadOnly = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

bool equal(const char* a, const char* b) {
  return ::strcmp(a, b) == 0;
}

template <size_t N>
bool listed(const char* name, const char* const (&list)[N]) {
  for (const char* n : list)
    if (equal(n, name)) return true;
  return false;
}

// `dir` + "/" + `name` into buf; false if it does not fit.
bool join(char* buf, size_t size, const char* dir, const char* name) {
  const size_t a = ::strlen(dir), b = ::strlen(name);
  if (a + 1 + b + 1 > size) return false;
  ::memcpy(buf, dir, a);
  buf[a] = '/';
  ::memcpy(buf + a + 1, name, b + 1);
  return true;
}

// The entry `name` of the host's .git, bound read-only over the same entry
// of the overlay. Symlinks are not followed on either side (ELOOP).
int cover(int real, int overlay, const char* name) {
  const ScopedFd from{child_fs::open_exact(real, name, O_PATH, RESOLVE_BENEATH)};
  if (from.fd < 0) return -from.fd;
  const ScopedFd to{child_fs::open_exact(overlay, name, O_PATH, RESOLVE_BENEATH)};
  if (to.fd < 0) return -to.fd;
  return child_fs::attach_copy(from.fd, to.fd, kReadOnly, true);
}

// objects/info holds `alternates`, objects read from any directory: it is
// made if missing (as `git init` does), so that it can be read-only.
int pin_objects_info(int real, int overlay) {
  const ScopedFd objects{child_fs::open_exact(real, "objects", O_PATH, RESOLVE_BENEATH)};
  if (objects.fd < 0) return -objects.fd;
  if (::mkdirat(objects.fd, "info", 0755) == 0) {
    // Owned like the repository: the init may be another host id (root
    // serving another user).
    struct stat repo;
    if (::fstat(real, &repo) == 0 &&
        ::fchownat(objects.fd, "info", repo.st_uid, repo.st_gid, AT_SYMLINK_NOFOLLOW) != 0) {
    }
  } else if (errno != EEXIST) {
    return errno;
  }
  return cover(real, overlay, "objects/info");
}

// Binds read-only over the overlay every existing top-level entry of the
// host's .git but git's state (kStateFiles, kStateDirs) and lock files.
int cover_entries(int real, int overlay) {
  return child_fs::for_each_name(real, [&](const char* name) {
    if (listed(name, kStateFiles)) return 0;
    // Another git's lock (another jail writing back): pinned, it would
    // stay taken for this jail's whole life.
    const size_t len = ::strlen(name);
    if (len > 5 && equal(name + len - 5, ".lock")) return 0;
    struct stat st;
    if (::fstatat(real, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      return errno == ENOENT ? 0 : errno;  // ENOENT: gone since it was listed
    // A symlink stays as the host has it, shown by the overlay: replacing
    // it, or writing through it to a name the overlay holds, goes to the
    // private layer; anything else is not git's.
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) return 0;
    if (S_ISDIR(st.st_mode) && listed(name, kStateDirs))
      return equal(name, "objects") ? pin_objects_info(real, overlay) : 0;
    return cover(real, overlay, name);
  });
}

// The private layer and the overlay on `real`. Returns 0 or an errno.
int mount_overlay(int real, const char* scratch, const char* tmpfs_data, int* upper) {
  char upper_dir[256], work_dir[256], lower_dir[256];
  if (!join(upper_dir, sizeof upper_dir, scratch, "upper") ||
      !join(work_dir, sizeof work_dir, scratch, "work") ||
      !join(lower_dir, sizeof lower_dir, scratch, "lower"))
    return ENAMETOOLONG;
  if (::mkdir(scratch, 0700) != 0) return errno;
  if (::mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_data) != 0) return errno;
  for (const char* d : {upper_dir, work_dir, lower_dir})
    if (::mkdir(d, 0755) != 0) return errno;
  // The private layer's top is the overlay's: owned like the repository, so
  // that the command (the repository's owner, not the init's id when root
  // serves another user) can take git's locks there.
  struct stat repo;
  if (::fstat(real, &repo) == 0 && ::chown(upper_dir, repo.st_uid, repo.st_gid) != 0) {
  }
  // The lower layer by path, so through a bind at a path of brig's own:
  // overlayfs resolves its options' paths, and the .git path lies in the
  // workspace, where a jail may have swapped a component for a symlink.
  {
    const ScopedFd lower{child_fs::open_exact(AT_FDCWD, lower_dir, O_PATH | O_DIRECTORY)};
    if (lower.fd < 0) return -lower.fd;
    if (int e = child_fs::attach_copy(real, lower.fd, kReadOnly, false)) return e;
  }
  char options[3 * 256 + 64];
  char* o = options;
  for (const char* part : {"lowerdir=", static_cast<const char*>(lower_dir),
                           ",upperdir=", static_cast<const char*>(upper_dir),
                           ",workdir=", static_cast<const char*>(work_dir), ",userxattr"}) {
    const size_t n = ::strlen(part);
    ::memcpy(o, part, n);
    o += n;
  }
  *o = '\0';
  *upper = child_fs::open_exact(AT_FDCWD, upper_dir, O_RDONLY | O_DIRECTORY);
  if (*upper < 0) return -*upper;
  return child_fs::mount_on(real, "overlay", "overlay", MS_NOSUID | MS_NODEV, options);
}

}  // namespace

int mount_in_child(const char* path, const char* scratch, const char* tmpfs_data, Kept* kept) {
  const int real = child_fs::open_exact(AT_FDCWD, path, O_PATH | O_DIRECTORY);
  if (real < 0) return -real;
  int upper = -1;
  int err = mount_overlay(real, scratch, tmpfs_data, &upper);
  if (err == 0) {
    // The overlay is on top now: check that it is what `path` shows.
    const ScopedFd overlay{child_fs::open_exact(AT_FDCWD, path, O_PATH | O_DIRECTORY)};
    struct statfs sf;
    if (overlay.fd < 0)
      err = -overlay.fd;
    else if (::fstatfs(overlay.fd, &sf) != 0 || sf.f_type != OVERLAYFS_SUPER_MAGIC)
      err = EXDEV;
    else
      err = cover_entries(real, overlay.fd);
  }
  if (err == 0) {
    kept->real = real;
    kept->upper = upper;
    return 0;
  }
  // Read-only as a whole instead, on top of whatever was made: the private
  // layer is dropped, nothing is written back.
  if (upper >= 0) ::close(upper);
  kept->fallback_errno = err;
  const ScopedFd top{child_fs::open_exact(AT_FDCWD, path, O_PATH | O_DIRECTORY)};
  const int e = top.fd < 0 ? -top.fd : child_fs::attach_copy(real, top.fd, kReadOnly, true);
  ::close(real);
  return e;
}

}  // namespace brig::jail::git_state
