#include "server/files/atomic_write.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "jail/base/unique_fd.h"
#include "server/files/utf8.h"

namespace brig::files {
namespace {

// The directories a write created for its file, removed again (deepest
// first) unless the write succeeded: a failed write leaves the tree as it
// found it. rmdir removes only empty directories, so nothing anyone else
// put there meanwhile is lost.
class MadeDirs {
 public:
  MadeDirs() = default;
  MadeDirs(const MadeDirs&) = delete;
  MadeDirs& operator=(const MadeDirs&) = delete;
  ~MadeDirs() {
    for (auto d = dirs_.rbegin(); d != dirs_.rend(); ++d) ::rmdir(d->c_str());
  }
  void add(std::string dir) { dirs_.push_back(std::move(dir)); }
  void keep() { dirs_.clear(); }
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  std::vector<std::string> dirs_;
};

Result<void> make_parents(const std::string& dir, std::string_view what, MadeDirs& made) {
  struct stat st {};
  // The usual case, the directory is there: one stat, not a mkdir per component.
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
  std::size_t pos = 1;
  while (pos <= dir.size()) {
    std::size_t end = dir.find('/', pos);
    if (end == std::string::npos) end = dir.size();
    const std::string prefix = dir.substr(0, end);
    if (::mkdir(prefix.c_str(), 0777) == 0) {
      made.add(prefix);
    } else if (errno != EEXIST) {
      return std::unexpected(sys_error(std::string(what), prefix, errno));
    }
    pos = end + 1;
  }
  if (::stat(dir.c_str(), &st) != 0)
    return std::unexpected(sys_error(std::string(what), dir, errno));
  if (!S_ISDIR(st.st_mode)) {
    return std::unexpected(Error{std::string(what), dir, "exists and is not a directory", ENOTDIR});
  }
  return {};
}

constexpr std::string_view kTempMark = ".brig-";
constexpr std::size_t kTempHexDigits = 16;

// The temporary file's name for a target named `name`: hidden,
// recognisable, and within NAME_MAX.
std::string temp_name_for(const std::string& name, std::string_view suffix) {
  return "." + name.substr(0, NAME_MAX - 40) + std::string(kTempMark) + std::string(suffix);
}

// Removes the temporary file unless released (the rename took it).
class TempFile {
 public:
  TempFile(int dir_fd, std::string name) : dir_fd_(dir_fd), name_(std::move(name)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!name_.empty()) ::unlinkat(dir_fd_, name_.c_str(), 0);
  }
  const std::string& name() const { return name_; }
  void release() { name_.clear(); }

 private:
  int dir_fd_;
  std::string name_;
};

Result<void> write_all(int fd, std::string_view data, std::string_view what,
                       const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(sys_error(std::string(what), path, errno));
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

}  // namespace

std::string random_temp_suffix() {
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) {
    // No entropy yet (early boot): unique within this process is enough,
    // the temporary file is created with O_EXCL.
    static std::uint64_t counter = 0;
    r = (static_cast<std::uint64_t>(::getpid()) << 32) ^ ++counter ^
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return fmt::format("{:016x}", r);
}

TempRemoval remove_temp(const std::string& path, std::string_view temp_suffix) {
  using enum TempRemoval;
  const std::string name = name_of(path);
  if (!is_temp_suffix(temp_suffix) || name.empty() || name == "." || name == "..") return gone;
  const UniqueFd dir_fd(::open(parent_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return errno == ENOENT ? gone : refused;
  const std::string tmp = temp_name_for(name, temp_suffix);
  // Every name here is the jail's to change, so nothing is followed: the
  // file is opened with O_NOFOLLOW (a symlink fails; O_NONBLOCK: a FIFO put
  // there must not block), must be a regular file, and is unlinked only
  // while its name still names that same file. The worker has the jail's
  // permissions, no more: removing what the jail could remove itself gives
  // it nothing.
  UniqueFd f(::openat(dir_fd.get(), tmp.c_str(),
                      O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!f) return errno == ENOENT ? gone : refused;
  struct stat st {};
  if (::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode)) return refused;
  if (::flock(f.get(), LOCK_EX | LOCK_NB) != 0) return held;  // a write in progress
  struct stat now {};
  if (::fstatat(dir_fd.get(), tmp.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 ||
      now.st_dev != st.st_dev || now.st_ino != st.st_ino)
    return refused;
  return ::unlinkat(dir_fd.get(), tmp.c_str(), 0) == 0 || errno == ENOENT ? gone : refused;
}

bool is_temp_suffix(std::string_view suffix) {
  return suffix.size() == kTempHexDigits && std::all_of(suffix.begin(), suffix.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool is_temp_name(std::string_view name) {
  constexpr std::size_t kTail = kTempMark.size() + kTempHexDigits;
  if (name.size() < 2 + kTail || name[0] != '.') return false;
  return name.substr(name.size() - kTail, kTempMark.size()) == kTempMark &&
         is_temp_suffix(name.substr(name.size() - kTempHexDigits));
}

FileStamp FileStamp::of(const struct stat& st) {
  return FileStamp{st.st_dev, st.st_ino, st.st_size, st.st_mtim};
}

std::string_view file_type_name(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "regular file";
    case S_IFDIR:
      return "directory";
    case S_IFLNK:
      return "symlink";
    case S_IFIFO:
      return "fifo";
    case S_IFSOCK:
      return "socket";
    case S_IFCHR:
      return "character device";
    case S_IFBLK:
      return "block device";
    default:
      return "special file";
  }
}

Result<WriteOutcome> atomic_write(const std::string& path, std::string_view data,
                                  const WriteOptions& options) {
  const std::string what(options.what);
  const std::string dir = parent_of(path);
  const std::string name = name_of(path);
  if (name.empty() || name == "." || name == "..") {
    return std::unexpected(Error{what, path, "names a directory, not a file", EISDIR});
  }
  MadeDirs made;
  if (options.create_parents) BRIG_TRY_VOID(make_parents(dir, what, made));

  // fsync needs a real descriptor, not O_PATH.
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) {
    const int err = errno;
    Error e = sys_error(what, path, err);
    if (err == ENOENT) {
      e.why = fmt::format("the directory {} does not exist; pass create_parents: true to create it",
                          name_to_text(dir));
    }
    return std::unexpected(std::move(e));
  }

  struct stat old {};
  bool created = false;
  if (::fstatat(dir_fd.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) return std::unexpected(sys_error(what, path, errno));
    created = true;
  } else if (S_ISLNK(old.st_mode)) {
    char target[PATH_MAX];
    const ssize_t n = ::readlinkat(dir_fd.get(), name.c_str(), target, sizeof target - 1);
    const std::string shown =
        n > 0 ? name_to_text(std::string_view(target, static_cast<std::size_t>(n))) : "?";
    return std::unexpected(Error{
        what, path,
        fmt::format("is a symlink to {}; brig does not write through symlinks (renaming over one "
                    "replaces the link): write to the target's path instead",
                    shown),
        ELOOP});
  } else if (!S_ISREG(old.st_mode)) {
    return std::unexpected(
        Error{what, path, fmt::format("is a {}, not a regular file", file_type_name(old.st_mode)),
              S_ISDIR(old.st_mode) ? EISDIR : EINVAL});
  }
  // Renaming would replace a file its mode (or a read-only mount) protects;
  // refuse as opening it for writing would.
  if (!created && ::faccessat(dir_fd.get(), name.c_str(), W_OK, AT_EACCESS) != 0) {
    return std::unexpected(sys_error(what, path, errno));
  }
  const auto still_expected = [&]() -> Result<void> {
    if (!options.expect) return {};
    struct stat now {};
    const bool same = !created &&
                      ::fstatat(dir_fd.get(), name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
                      S_ISREG(now.st_mode) && FileStamp::of(now) == *options.expect;
    if (same) return {};
    return std::unexpected(
        Error{what, path, "the file changed after it was read; read it again and retry", 0});
  };
  BRIG_TRY_VOID(still_expected());

  if (!options.temp_suffix.empty() && !is_temp_suffix(options.temp_suffix))
    return std::unexpected(Error{what, path, "bad temporary file suffix", EINVAL});
  // The server's name, or one of ours: with the server's, one attempt (the
  // server recorded that name, and only that one may be left behind).
  UniqueFd fd;
  std::string tmp_name;
  const int attempts = options.temp_suffix.empty() ? 16 : 1;
  for (int attempt = 0; attempt < attempts && !fd; ++attempt) {
    tmp_name = temp_name_for(name, options.temp_suffix.empty() ? random_temp_suffix()
                                                               : std::string(options.temp_suffix));
    fd = UniqueFd(::openat(dir_fd.get(), tmp_name.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                           created ? 0666 : 0600));
    if (!fd && errno != EEXIST) return std::unexpected(sys_error(what, path, errno));
  }
  if (!fd) return std::unexpected(sys_error(what, path, EEXIST));
  TempFile temp(dir_fd.get(), tmp_name);
  // Held until the rename, by a second descriptor of the same open file (fd
  // is closed before the rename, to see its error): a sweep by another
  // writer in this directory leaves the file alone meanwhile.
  if (::flock(fd.get(), LOCK_EX) != 0) return std::unexpected(sys_error(what, path, errno));
  const UniqueFd lock(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!lock) return std::unexpected(sys_error(what, path, errno));

  BRIG_TRY_VOID(write_all(fd.get(), data, what, path));
  if (!created) {
    struct stat mine {};
    if (::fstat(fd.get(), &mine) != 0) return std::unexpected(sys_error(what, path, errno));
    // Owner first: chown clears set-uid/set-gid bits, which fchmod then
    // restores. An unprivileged caller cannot give files away; the file then
    // keeps the writer's ids, as an editor's save would.
    if ((mine.st_uid != old.st_uid || mine.st_gid != old.st_gid) &&
        ::fchown(fd.get(), old.st_uid, old.st_gid) != 0 && errno != EPERM && errno != EINVAL) {
      return std::unexpected(sys_error(what, path, errno));
    }
    if (::fchmod(fd.get(), old.st_mode & 07777) != 0) {
      return std::unexpected(sys_error(what, path, errno));
    }
  }
  if (::fsync(fd.get()) != 0) return std::unexpected(sys_error(what, path, errno));
  struct stat written {};
  if (::fstat(fd.get(), &written) != 0) return std::unexpected(sys_error(what, path, errno));
  if (::close(fd.release()) != 0) return std::unexpected(sys_error(what, path, errno));

  BRIG_TRY_VOID(still_expected());
  if (::renameat(dir_fd.get(), tmp_name.c_str(), dir_fd.get(), name.c_str()) != 0) {
    return std::unexpected(sys_error(what, path, errno));
  }
  temp.release();
  const std::vector<std::string> made_dirs = made.dirs();
  made.keep();
  // The rename is durable once the directory is; some filesystems refuse
  // fsync on a directory, which leaves nothing to do.
  const auto sync_dir = [&](int fd) -> Result<void> {
    if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
      return std::unexpected(sys_error(what, path, errno));
    return {};
  };
  BRIG_TRY_VOID(sync_dir(dir_fd.get()));
  // A directory create_parents made is an entry in its parent, which must
  // be durable too, or the file goes with the directory at a crash. (The
  // directory itself was synced above, or is the parent of the next.)
  for (const std::string& d : made_dirs) {
    const UniqueFd parent(::open(parent_of(d).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!parent) return std::unexpected(sys_error(what, path, errno));
    BRIG_TRY_VOID(sync_dir(parent.get()));
  }
  return WriteOutcome{created, written.st_mode & 07777};
}

}  // namespace brig::files
