#include "server/pool/write_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/files/atomic_write.h"

namespace brig::pool {
namespace {

constexpr std::string_view kWhat = "open the write journal";
constexpr std::size_t kMaxEntryBytes = 64 << 10;

// Stable across builds and runs (std::hash is not): the key must name the
// same directory for the next server.
std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325u;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3u;
  }
  return h;
}

std::string random_hex() {
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
    r = fnv1a(fmt::format("{}-{}", ::getpid(), static_cast<const void*>(&r)));
  return fmt::format("{:016x}", r);
}

// Why the directory open as fd may not hold a journal, or empty: it must
// be this user's and writable by nobody else.
std::string unsafe_dir(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fmt::format("cannot stat it: {}", std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (st.st_uid != ::geteuid())
    return fmt::format("is owned by uid {}, not by brig's uid {}", st.st_uid, ::geteuid());
  if ((st.st_mode & 022) != 0)
    return fmt::format("is writable by its group or others (mode {:04o})", st.st_mode & 07777);
  return {};
}

// Opens (making it, 0700, if missing) the directory `name` relative to at,
// never through a symlink, and checks unsafe_dir().
Result<UniqueFd> open_own_dir(int at, const std::string& name, const std::string& shown) {
  if (::mkdirat(at, name.c_str(), 0700) != 0 && errno != EEXIST)
    return std::unexpected(sys_error(std::string(kWhat), shown, errno));
  UniqueFd fd(::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    Error e = sys_error(std::string(kWhat), shown, err);
    if (err == ELOOP || err == ENOTDIR) e.why = "is a symlink or not a directory";
    return std::unexpected(std::move(e));
  }
  if (std::string why = unsafe_dir(fd.get()); !why.empty())
    return std::unexpected(Error{std::string(kWhat), shown, why, EPERM});
  return fd;
}

// The names in the directory open as fd ("." and ".." left out).
std::vector<std::string> names_in(int fd) {
  std::vector<std::string> names;
  const int list_fd = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return names;
  DIR* dir = ::fdopendir(list_fd);
  if (dir == nullptr) {
    ::close(list_fd);
    return names;
  }
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  ::closedir(dir);
  return names;
}

// An entry's path argument; empty when it is not a small regular file.
std::string read_entry(int dir_fd, const std::string& name) {
  const UniqueFd fd(
      ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) > kMaxEntryBytes)
    return {};
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

// Removes the directories of dead servers under the key directory at
// key_fd that hold no entry, then the key directory if that emptied it:
// workspaces served once (a test's, say) leave nothing behind for long.
void prune_key(int root_fd, const std::string& key) {
  const UniqueFd key_fd(
      ::openat(root_fd, key.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!key_fd || !unsafe_dir(key_fd.get()).empty()) return;
  for (const std::string& name : names_in(key_fd.get())) {
    if (name.starts_with(".")) continue;
    const UniqueFd dir(
        ::openat(key_fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) continue;
    const UniqueFd lock(::openat(dir.get(), "lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;
    const std::vector<std::string> names = names_in(dir.get());
    if (names.size() != 1) continue;  // entries: for the next server of that workspace
    ::unlinkat(dir.get(), "lock", 0);
    ::unlinkat(key_fd.get(), name.c_str(), AT_REMOVEDIR);
  }
  ::unlinkat(root_fd, key.c_str(), AT_REMOVEDIR);  // fails unless empty
}

}  // namespace

std::string WriteJournal::default_root() {
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && state[0] == '/') return std::string(state) + "/brig/writes";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.local/state/brig/writes";
  return {};
}

WriteJournal::WriteJournal(UniqueFd key_dir, UniqueFd dir, UniqueFd lock, std::string name,
                           std::string dir_path)
    : key_dir_(std::move(key_dir)),
      dir_fd_(std::move(dir)),
      lock_(std::move(lock)),
      name_(std::move(name)),
      dir_(std::move(dir_path)) {}

Result<std::unique_ptr<WriteJournal>> WriteJournal::open(const std::string& root,
                                                         const std::string& workspace, uid_t uid) {
  if (root.empty() || root[0] != '/')
    return std::unexpected(Error{std::string(kWhat), root, "needs an absolute path", EINVAL});
  // The parents of root are made as a user's state directories would be
  // (0700); root itself must then be this user's alone.
  for (std::size_t slash = root.find('/', 1); slash != std::string::npos;
       slash = root.find('/', slash + 1)) {
    const std::string parent = root.substr(0, slash);
    if (::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST)
      return std::unexpected(sys_error(std::string(kWhat), parent, errno));
  }
  const std::size_t last = root.find_last_of('/');
  const UniqueFd parent(
      ::open(last == 0 ? "/" : root.substr(0, last).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) return std::unexpected(sys_error(std::string(kWhat), root, errno));
  UniqueFd root_fd = BRIG_TRY(open_own_dir(parent.get(), root.substr(last + 1), root));
  const std::string key = fmt::format("{:016x}", fnv1a(fmt::format("{}\n{}", workspace, uid)));
  for (const std::string& other : names_in(root_fd.get()))
    if (other != key) prune_key(root_fd.get(), other);
  // Another server's prune_key may remove the key directory between our
  // open and our mkdir in it (while it is empty): then again.
  Result<std::unique_ptr<WriteJournal>> made = make_instance(root_fd.get(), root, key);
  for (int again = 0; again < 3 && !made && made.error().sys_errno == ENOENT; ++again)
    made = make_instance(root_fd.get(), root, key);
  return made;
}

Result<std::unique_ptr<WriteJournal>> WriteJournal::make_instance(int root_fd,
                                                                  const std::string& root,
                                                                  const std::string& key) {
  UniqueFd key_fd = BRIG_TRY(open_own_dir(root_fd, key, root + "/" + key));
  // Made under a dot name and renamed once its lock is held: another
  // server never sees this one's directory without a held lock.
  const std::string name = fmt::format("{}-{}", ::getpid(), random_hex());
  const std::string making = ".new-" + name;
  const std::string dir_path = root + "/" + key + "/" + name;
  UniqueFd dir = BRIG_TRY(open_own_dir(key_fd.get(), making, dir_path));
  UniqueFd lock(
      ::openat(dir.get(), "lock", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0 ||
      ::renameat(key_fd.get(), making.c_str(), key_fd.get(), name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir.get(), "lock", 0);
    ::unlinkat(key_fd.get(), making.c_str(), AT_REMOVEDIR);
    return std::unexpected(sys_error(std::string(kWhat), dir_path, err));
  }
  return std::unique_ptr<WriteJournal>(new WriteJournal(
      std::move(key_fd), std::move(dir), std::move(lock), std::move(name), dir_path));
}

WriteJournal::~WriteJournal() {
  for (const std::string& n : names_in(dir_fd_.get()))
    if (n != "lock") return;  // entries left: the next server adopts them
  ::unlinkat(dir_fd_.get(), "lock", 0);
  ::unlinkat(key_dir_.get(), name_.c_str(), AT_REMOVEDIR);
}

Result<void> WriteJournal::add(const Entry& entry) {
  if (!files::is_temp_suffix(entry.suffix) || entry.path.size() > kMaxEntryBytes)
    return std::unexpected(Error{"record a write", entry.suffix, "not a journal entry", EINVAL});
  const UniqueFd fd(::openat(dir_fd_.get(), entry.suffix.c_str(),
                             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return std::unexpected(sys_error("record a write", dir_ + "/" + entry.suffix, errno));
  std::string_view rest = entry.path;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::unlinkat(dir_fd_.get(), entry.suffix.c_str(), 0);
      return std::unexpected(sys_error("record a write", dir_ + "/" + entry.suffix, err));
    }
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

void WriteJournal::remove(std::string_view suffix) {
  if (files::is_temp_suffix(suffix)) ::unlinkat(dir_fd_.get(), std::string(suffix).c_str(), 0);
}

std::vector<WriteJournal::Entry> WriteJournal::adopt_orphans(std::size_t max) {
  std::vector<Entry> adopted;
  for (const std::string& name : names_in(key_dir_.get())) {
    if (name == name_) continue;
    const UniqueFd dir(
        ::openat(key_dir_.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir || !unsafe_dir(dir.get()).empty()) continue;
    // A server alive holds its lock. A directory still being made may not
    // have one yet: only a made one without a lock is taken.
    const UniqueFd lock(::openat(dir.get(), "lock", O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (!lock && (errno != ENOENT || name.starts_with("."))) continue;
    if (lock && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;
    std::size_t dropped = 0;
    for (const std::string& e : names_in(dir.get())) {
      if (e == "lock") continue;
      if (files::is_temp_suffix(e) && adopted.size() < max) {
        std::string path = read_entry(dir.get(), e);
        // Moved, not copied: a rename gives each entry to one server.
        if (!path.empty() && ::renameat(dir.get(), e.c_str(), dir_fd_.get(), e.c_str()) == 0) {
          adopted.push_back(Entry{e, std::move(path)});
          continue;
        }
      } else {
        ++dropped;
      }
      ::unlinkat(dir.get(), e.c_str(), 0);
    }
    if (dropped > 0)
      spdlog::warn("write journal {}/{}: dropped {} entries past the {} a server takes over",
                   dir_.substr(0, dir_.rfind('/')), name, dropped, max);
    ::unlinkat(dir.get(), "lock", 0);
    ::unlinkat(key_dir_.get(), name.c_str(), AT_REMOVEDIR);
  }
  return adopted;
}

}  // namespace brig::pool
