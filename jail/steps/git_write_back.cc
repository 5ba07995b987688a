// The git layer's write-back (git_state.h): what git in a jail wrote, merged
// into the host's .git once the jail's processes are gone, and only what
// git itself would write. Everything here reads the private layer as
// attacker input, by file descriptor, and writes the host's .git through
// descriptors opened with RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH.
//
// A file is first copied into a name of brig's own in the host's directory
// (`<name>.lock`, as git's lock protocol wants, or a temporary object
// name), checked there, where nothing of the jail can change it any more,
// and only then renamed over. Names and contents follow git's rules:
// git-check-ref-format(1) for refs, gitrepository-layout(5) for where things
// live, gitformat-index(5) for the index (git_index_check.h).
//
// Runs in the jail's init: raw syscalls and fixed buffers only.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <initializer_list>

#include "jail/steps/child_fs.h"
#include "jail/steps/git_index_check.h"
#include "jail/steps/git_state.h"
#include "jail/steps/sha1.h"

namespace brig::jail::git_state {
namespace {

using child_fs::ScopedFd;

constexpr uint64_t kBeneath = RESOLVE_BENEATH;
constexpr size_t kMaxName = 1024;            // a ref's or an object's path below .git
constexpr int kMaxDepth = 16;                // directories below refs/ or logs/
constexpr off_t kMaxSmall = 16 << 20;        // HEAD, refs, messages, packed-refs, …
constexpr off_t kMaxIndex = off_t{1} << 30;  // the index of a very large worktree
constexpr off_t kMaxLog = 64 << 20;          // one reflog
// What the objects of one jail may inflate to, together: a small object can
// inflate to gigabytes, and the init hashes it all.
constexpr uint64_t kMaxInflated = uint64_t{4} << 30;
uint64_t inflated_left = kMaxInflated;

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// An object id: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits.
bool is_oid(const char* s, size_t n) {
  if (n != 40 && n != 64) return false;
  for (size_t i = 0; i < n; ++i)
    if (!is_hex(s[i])) return false;
  return true;
}

// git-check-ref-format(1): slash-separated components, none beginning with
// '.' or ending with ".lock", no "..", no control characters, space ~ ^ : ?
// * [ \, no "@{", not ending with '/' or '.', not "@"; and below refs/.
bool is_refname(const char* s, size_t n) {
  if (n < 6 || n > kMaxName || ::strncmp(s, "refs/", 5) != 0) return false;
  if (s[n - 1] == '/' || s[n - 1] == '.') return false;
  size_t start = 0;
  for (size_t i = 0; i <= n; ++i) {
    if (i == n || s[i] == '/') {
      const size_t len = i - start;
      if (len == 0 || s[start] == '.') return false;
      if (len >= 5 && ::strncmp(s + i - 5, ".lock", 5) == 0) return false;
      start = i + 1;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' ||
        c == '*' || c == '[' || c == '\\')
      return false;
    if (c == '.' && i + 1 < n && s[i + 1] == '.') return false;
    if (c == '@' && i + 1 < n && s[i + 1] == '{') return false;
  }
  return true;
}

// A ref brig writes back: a valid name, and not under refs/replace/ (a
// replace ref makes the host's git show one object for another everywhere
// but in what it pushes: reviewed history would differ from published).
// Every way a ref comes back (loose, packed, a symbolic ref's target, a
// reflog) asks this.
bool is_writable_ref(const char* s, size_t n) {
  return is_refname(s, n) && !(n >= 13 && ::strncmp(s, "refs/replace/", 13) == 0);
}

// What a file's contents must be, line by line (or as a whole for the index).
enum class Shape {
  ref,          // one line: an object id, or "ref: " and a refname (refs/…)
  head,         // as ref, a symbolic one under refs/heads/ (HEAD: on a tag, the host's
                // next commit would move the tag)
  oids,         // lines of object ids (ORIG_HEAD, MERGE_HEAD, shallow, …)
  fetch_head,   // lines: an object id, a tab, then text
  packed_refs,  // "# pack-refs with:" header, "<oid> <refname>", "^<oid>"
  text,         // text without NUL (messages, MERGE_MODE, reflogs)
  index,        // gitformat-index(5), by git_index::check
};

// packed-refs' order, across lines: git binary-searches the file, so refs
// out of order (or twice) would be missed on the host; a peeled line (^)
// belongs to the ref just before it.
struct PackedOrder {
  char prev[kMaxName + 1];
  size_t prev_len = 0;
  bool after_ref = false;
};
PackedOrder packed_order;

bool line_fits(Shape shape, const char* l, size_t n, bool first) {
  switch (shape) {
    case Shape::ref:
      if (!first) return false;
      if (n > 5 && ::strncmp(l, "ref: ", 5) == 0) return is_writable_ref(l + 5, n - 5);
      return is_oid(l, n);
    case Shape::head:
      if (!first) return false;
      if (n > 5 && ::strncmp(l, "ref: ", 5) == 0)
        return n > 16 && ::strncmp(l + 5, "refs/heads/", 11) == 0 && is_writable_ref(l + 5, n - 5);
      return is_oid(l, n);
    case Shape::oids:
      return is_oid(l, n);
    case Shape::fetch_head: {
      const char* tab = static_cast<const char*>(::memchr(l, '\t', n));
      return tab != nullptr && is_oid(l, static_cast<size_t>(tab - l));
    }
    case Shape::packed_refs: {
      PackedOrder& o = packed_order;
      if (first) {
        o.prev_len = 0;
        o.after_ref = false;
        if (n >= 17 && ::strncmp(l, "# pack-refs with:", 17) == 0) return true;
      }
      if (n > 0 && l[0] == '^') {
        const bool ok = o.after_ref && is_oid(l + 1, n - 1);
        o.after_ref = false;
        return ok;
      }
      const char* space = static_cast<const char*>(::memchr(l, ' ', n));
      if (space == nullptr) return false;
      const size_t k = static_cast<size_t>(space - l);
      const char* ref = space + 1;
      const size_t ref_len = n - k - 1;
      if (!is_oid(l, k) || !is_writable_ref(ref, ref_len)) return false;
      const int c = ::memcmp(o.prev, ref, o.prev_len < ref_len ? o.prev_len : ref_len);
      if (o.prev_len > 0 && (c > 0 || (c == 0 && o.prev_len >= ref_len))) return false;
      ::memcpy(o.prev, ref, ref_len);
      o.prev_len = ref_len;
      o.after_ref = true;
      return true;
    }
    case Shape::text:
    case Shape::index:
      return true;
  }
  return false;
}

// Whether the file at fd (read from its start) has `shape` (not the index:
// sanitize_index). Async-signal-safe.
bool fits(int fd, Shape shape) {
  if (::lseek(fd, 0, SEEK_SET) != 0) return false;
  static char buf[64 * 1024];
  static char line[kMaxName + 128];
  size_t have = 0;  // bytes of the current line in `line`
  bool first = true, any = false, too_long = false;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buf[i];
      if (c == '\0') return false;
      if (shape == Shape::text) continue;
      if (c != '\n') {
        if (have < sizeof line)
          line[have++] = c;
        else
          too_long = true;
        continue;
      }
      if (too_long || !line_fits(shape, line, have, first)) return false;
      first = false;
      any = true;
      have = 0;
    }
  }
  if (shape == Shape::text) return true;
  // Every line ends with a newline; a ref holds exactly one.
  return have == 0 && (any || (shape != Shape::ref && shape != Shape::head));
}

// A mapping unmapped at scope exit.
struct Mapping {
  void* addr;
  size_t size;
  ~Mapping() {
    if (addr != MAP_FAILED) ::munmap(addr, size);
  }
};

// Checks the index in `fd` (git_index_check.h) and rewrites it: without
// its cache tree (a TREE node names the tree object the host's next `git
// commit` records for a directory the user did not touch, whatever the
// entries say, so a forged one would commit what `git diff --cached` never
// showed; git rebuilds it) and the offset tables (EOIE, IEOT), whose layout
// changes; with every entry's cached stat data zeroed (where it matches the
// file on disk, git never looks at the file again, so forged data would hide
// an edit from `git status`; zeroed, git compares each file once more). The
// resolve-undo data (REUC) goes too: its paths are not checked here. The new trailer is the SHA-1
// of what precedes it, as git's reader checks; an index of a SHA-256 repository is refused. Returns
// 0 or an errno.
int sanitize_index(int fd, size_t size) {
  if (size == 0) return EINVAL;
  const Mapping in{::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0), size};
  if (in.addr == MAP_FAILED) return errno;
  const auto* data = static_cast<const unsigned char*>(in.addr);
  git_index::Parsed parsed;
  if (git_index::check(data, size, &parsed) != git_index::Verdict::ok) return EINVAL;
  if (parsed.hash_size != 20) return EINVAL;
  const Mapping out{
      ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), size};
  if (out.addr == MAP_FAILED) return errno;
  auto* o = static_cast<unsigned char*>(out.addr);
  ::memcpy(o, data, parsed.entries_end);
  if (!git_index::clear_stat_data(o, size, parsed)) return EINVAL;
  // No extension at all: each would need checks of its own.
  size_t used = parsed.entries_end;
  sha1::Hasher h;
  h.update(o, used);
  h.finish(o + used);
  used += 20;
  for (size_t done = 0; done < used;) {
    const ssize_t w = ::pwrite(fd, o + done, used - done, static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    done += static_cast<size_t>(w);
  }
  return ::ftruncate(fd, static_cast<off_t>(used)) == 0 ? 0 : errno;
}

// Rewrites packed-refs in `fd` (checked by fits) without its peeled lines
// and traits: git trusts a `^` line as what the tag before it points to
// (`git describe` names releases by it), and brig cannot check one without
// the tag object. Without them git peels tags itself. Only drops bytes, so
// it writes behind where it reads. Returns 0 or an errno.
int strip_peeled(int fd) {
  static char in[64 * 1024], out[64 * 1024], line[kMaxName + 128];
  off_t roff = 0, woff = 0;
  size_t have = 0, used = 0;
  bool first = true;
  auto flush = [&]() -> int {
    for (size_t done = 0; done < used;) {
      const ssize_t w = ::pwrite(fd, out + done, used - done, woff);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return w < 0 ? errno : EIO;
      done += static_cast<size_t>(w);
      woff += w;
    }
    used = 0;
    return 0;
  };
  for (;;) {
    const ssize_t n = ::pread(fd, in, sizeof in, roff);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) break;
    roff += n;
    for (ssize_t i = 0; i < n; ++i) {
      if (have >= sizeof line) return EINVAL;  // fits() allowed no such line
      line[have++] = in[i];
      if (in[i] != '\n') continue;
      const char* keep = line;
      size_t keep_len = have;
      if (first && have >= 17 && ::strncmp(line, "# pack-refs with:", 17) == 0) {
        static const char kSorted[] = "# pack-refs with: sorted \n";
        keep = kSorted;
        keep_len = sizeof kSorted - 1;
      } else if (line[0] == '^') {
        keep_len = 0;
      }
      first = false;
      have = 0;
      if (used + keep_len > sizeof out)
        if (int e = flush()) return e;
      ::memcpy(out + used, keep, keep_len);
      used += keep_len;
    }
  }
  if (int e = flush()) return e;
  return ::ftruncate(fd, woff) == 0 ? 0 : errno;
}

// Waits 10 ms.
void nap() {
  const timespec t = {0, 10 * 1000 * 1000};
  ::nanosleep(&t, nullptr);
}

// Copies from `from` (at its start) into `to`. Returns 0 or an errno.
int copy_fd(int from, int to) {
  static char buf[64 * 1024];
  if (::lseek(from, 0, SEEK_SET) != 0) return errno;
  for (;;) {
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(to, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return w < 0 ? errno : EIO;
      done += w;
    }
  }
}

// The private layer's regular file `name` in `up_dir`, opened without
// following a symlink or blocking on a fifo; -errno if it is anything else.
int open_upper(int up_dir, const char* name, struct stat* st, off_t max) {
  const int fd = ::openat(up_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -errno;
  if (::fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_size > max) {
    ::close(fd);
    return -EINVAL;
  }
  return fd;
}

// Gives what the write-back made (`name` in `dir`, or `dir` itself when
// `name` is empty) the owner of the host's .git. The init may be a host id
// other than the repository's (root serving another user): what it writes
// there must not be its own.
void own_like_repository(int real, int dir, const char* name) {
  struct stat repo;
  if (::fstat(real, &repo) != 0) return;
  if (::fchownat(dir, name, repo.st_uid, repo.st_gid, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0) {
  }
}

// The host's directory `path` below `real` (a .git), made as needed,
// opened without following symlinks. -errno on failure.
int host_dir(int real, const char* path) {
  char part[kMaxName + 1];
  const size_t n = ::strlen(path);
  if (n > kMaxName) return -ENAMETOOLONG;
  int dir = child_fs::open_exact(real, ".", O_PATH | O_DIRECTORY, kBeneath);
  for (size_t start = 0; dir >= 0 && start < n;) {
    size_t end = start;
    while (end < n && path[end] != '/') ++end;
    ::memcpy(part, path + start, end - start);
    part[end - start] = '\0';
    start = end + 1;
    if (::mkdirat(dir, part, 0755) == 0) {
      own_like_repository(real, dir, part);
    } else if (errno != EEXIST) {
      const int e = errno;
      ::close(dir);
      return -e;
    }
    const int next = child_fs::open_exact(dir, part, O_PATH | O_DIRECTORY, kBeneath);
    ::close(dir);
    dir = next;
  }
  return dir;
}

// Replaces `name` in the host directory `dir` with the private layer's file
// `up_fd`, through `<name>.lock` (taken as git does: O_EXCL, waiting up to
// half a second for another git), if the copy has `shape`. The host file's
// mode is kept (0644 for a new one).
int replace(int dir, const char* name, int up_fd, const struct stat& up, Shape shape) {
  char lock[kMaxName + 8];
  const size_t len = ::strlen(name);
  if (len + sizeof ".lock" > sizeof lock) return ENAMETOOLONG;
  ::memcpy(lock, name, len);
  ::memcpy(lock + len, ".lock", sizeof ".lock");
  struct stat old;
  const mode_t mode = ::fstatat(dir, name, &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode)
                          ? (old.st_mode & 0666)
                          : 0644;
  int to = -1;
  for (int tries = 0; tries < 50; ++tries) {
    to = ::openat(dir, lock, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (to >= 0 || errno != EEXIST) break;
    nap();
  }
  if (to < 0) return errno;
  const ScopedFd lock_fd{to};
  // Owned like the directory it goes in (the init may be another host id).
  struct stat d;
  if (::fstat(dir, &d) == 0 && ::fchown(to, d.st_uid, d.st_gid) != 0) {
  }
  int err = copy_fd(up_fd, to);
  struct stat copied;
  if (err == 0 && ::fstat(to, &copied) != 0) err = errno;
  if (err == 0 && copied.st_size > up.st_size) err = EINVAL;
  if (err == 0 && shape == Shape::index)
    err = sanitize_index(to, static_cast<size_t>(copied.st_size));
  else if (err == 0 && !fits(to, shape))
    err = EINVAL;
  if (err == 0 && shape == Shape::packed_refs) err = strip_peeled(to);
  // git's racy-entry check compares file times with the index's own.
  const timespec times[2] = {up.st_atim, up.st_mtim};
  if (err == 0 && ::futimens(to, times) != 0) err = errno;
  if (err == 0 && ::renameat(dir, lock, dir, name) != 0) err = errno;
  if (err) ::unlinkat(dir, lock, 0);
  return err;
}

// An overlay whiteout: the jail deleted the host's file.
bool is_whiteout(const struct stat& st) {
  return S_ISCHR(st.st_mode) && st.st_rdev == 0;
}

bool equal_str(const char* a, const char* b) {
  return ::strcmp(a, b) == 0;
}

// --- objects/ ---

// A loose object's file name: the id's hex digits after the first two.
bool is_oid_tail(const char* s, size_t n) {
  if (n != 38 && n != 62) return false;
  for (size_t i = 0; i < n; ++i)
    if (!is_hex(s[i])) return false;
  return true;
}

// zlib's memory for one object at a time, from a fixed arena: the init
// cannot call malloc. inflate needs its state (~7 KiB) and a 32 KiB window.
struct Arena {
  alignas(16) unsigned char bytes[64 * 1024];
  size_t used = 0;
};
Arena arena;

voidpf arena_alloc(voidpf, uInt items, uInt size) {
  const size_t n = (static_cast<size_t>(items) * size + 15) & ~size_t{15};
  if (n > sizeof arena.bytes - arena.used) return Z_NULL;
  void* p = arena.bytes + arena.used;
  arena.used += n;
  return p;
}
void arena_free(voidpf, voidpf) {}

// Whether "<type> <size>" is a loose object's header git writes.
bool header_fits(const char* h, size_t n, uint64_t* size) {
  const char* space = static_cast<const char*>(::memchr(h, ' ', n));
  if (space == nullptr) return false;
  const size_t type_len = static_cast<size_t>(space - h);
  bool type_ok = false;
  for (const char* t : {"blob", "tree", "commit", "tag"})
    if (::strlen(t) == type_len && ::memcmp(h, t, type_len) == 0) type_ok = true;
  const char* digits = space + 1;
  const size_t len = n - type_len - 1;
  if (!type_ok || len == 0 || len > 19 || (len > 1 && digits[0] == '0')) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < len; ++i) {
    if (digits[i] < '0' || digits[i] > '9') return false;
    v = v * 10 + static_cast<uint64_t>(digits[i] - '0');
  }
  *size = v;
  return true;
}

// Whether objects/`dir`/`name` is the name of the object whose SHA-1 is
// `digest`.
bool names_object(const unsigned char (&digest)[20], const char* dir, const char* name) {
  static const char kHex[] = "0123456789abcdef";
  char id[41];
  for (int i = 0; i < 20; ++i) {
    id[2 * i] = kHex[digest[i] >> 4];
    id[2 * i + 1] = kHex[digest[i] & 15];
  }
  return ::memcmp(id, dir, 2) == 0 && ::memcmp(id + 2, name, 38) == 0;
}

// Whether the loose object in `fd` is what its name says: one zlib stream,
// nothing after it, of "<type> <size>\0" and `size` bytes, whose SHA-1 is
// `dir` + `name` (gitformat-loose(5)). Named for its contents, an object
// must not be something else: the host's git would take it for the one it
// names (a blob the user adds later with that id, say). SHA-1 only: a
// repository with 64-digit ids gets no object back.
bool loose_object_is_sound(int fd, const char* dir, const char* name) {
  if (::strlen(name) != 38 || ::lseek(fd, 0, SEEK_SET) != 0) return false;
  arena.used = 0;
  z_stream z{};
  z.zalloc = arena_alloc;
  z.zfree = arena_free;
  if (inflateInit(&z) != Z_OK) return false;
  static unsigned char in[64 * 1024], out[64 * 1024];
  sha1::Hasher h;
  char header[32];
  size_t header_len = 0;
  bool header_done = false, ok = true;
  uint64_t declared = 0, total = 0;
  int ret = Z_OK;
  while (ok && ret != Z_STREAM_END) {
    const ssize_t n = ::read(fd, in, sizeof in);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    z.next_in = in;
    z.avail_in = static_cast<uInt>(n);
    while (ok && z.avail_in > 0) {
      if (ret == Z_STREAM_END) {
        ok = false;  // bytes after the stream
        break;
      }
      z.next_out = out;
      z.avail_out = sizeof out;
      ret = inflate(&z, Z_NO_FLUSH);
      if (ret != Z_OK && ret != Z_STREAM_END) ok = false;
      const size_t got = sizeof out - z.avail_out;
      h.update(out, got);
      total += got;
      if (got > inflated_left)
        ok = false;
      else
        inflated_left -= got;
      for (size_t i = 0; i < got && !header_done && ok; ++i) {
        if (out[i] == '\0') {
          header_done = header_fits(header, header_len, &declared);
          ok = header_done;
        } else if (header_len < sizeof header) {
          header[header_len++] = static_cast<char>(out[i]);
        } else {
          ok = false;
        }
      }
    }
  }
  inflateEnd(&z);
  // Nothing may follow the stream in the file either.
  if (ok && ::read(fd, in, 1) != 0) ok = false;
  if (!ok || ret != Z_STREAM_END || !header_done || total != header_len + 1 + declared)
    return false;
  unsigned char digest[20];
  h.finish(digest);
  return names_object(digest, dir, name);
}

// Whether `name` in objects/`dir` is a loose object's file name (packs are
// not taken back: checking one is git index-pack's work, and a pack's index
// can claim any id for any data; brig has the jail's git keep fetched
// objects loose, see policy's GIT_CONFIG_*).
bool is_loose_object(const char* dir, const char* name) {
  return ::strlen(dir) == 2 && is_hex(dir[0]) && is_hex(dir[1]) &&
         is_oid_tail(name, ::strlen(name));
}

// Adds the object file `name` to the host's objects/`dir` if it is sound and
// not there yet: objects are never replaced (and never deleted: what git gc
// pruned stays). The copy is checked, under a temporary name of its own.
int add_object(int real, int up_dir, const char* dir, const char* name) {
  struct stat up;
  const ScopedFd from{open_upper(up_dir, name, &up, off_t{1} << 34)};
  if (from.fd < 0) return -from.fd;
  char path[kMaxName];
  ::snprintf(path, sizeof path, "objects/%s", dir);
  const ScopedFd to_dir{host_dir(real, path)};
  if (to_dir.fd < 0) return -to_dir.fd;
  struct stat st;
  if (::fstatat(to_dir.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) return 0;
  // A name no other init picks (each jail's init is pid 1): random.
  unsigned char rnd[8];
  if (::syscall(SYS_getrandom, rnd, sizeof rnd, 0) != static_cast<long>(sizeof rnd)) return EIO;
  char tmp[64];
  ::snprintf(tmp, sizeof tmp, "tmp_obj_brig_%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
             rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
  const int to = ::openat(to_dir.fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (to < 0) return errno;
  own_like_repository(real, to, "");
  int err = copy_fd(from.fd, to);
  if (err == 0 && !loose_object_is_sound(to, dir, name)) err = EINVAL;
  ::close(to);
  if (err == 0 &&
      ::syscall(SYS_renameat2, to_dir.fd, tmp, to_dir.fd, name, RENAME_NOREPLACE) != 0 &&
      errno != EEXIST)
    err = errno;
  ::unlinkat(to_dir.fd, tmp, 0);  // ours (O_EXCL); gone already after a rename
  return err;
}

// Calls fn(name, stat) for each entry of the directory fd (an entry gone
// since it was listed is skipped).
template <typename Fn>
int each_entry(int dir, Fn fn) {
  return child_fs::for_each_name(dir, [&](const char* name) {
    struct stat st;
    if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) fn(name, st);
    return 0;
  });
}

// New loose objects, each checked. Returns how many entries were refused;
// *pack is set when the private layer holds a pack (git gc, a fetch of many
// objects): objects that live only there do not come back.
int merge_objects(int real, int upper, bool* pack) {
  inflated_left = kMaxInflated;
  const ScopedFd objects{child_fs::open_exact(upper, "objects", O_PATH | O_DIRECTORY, kBeneath)};
  if (objects.fd < 0) return 0;  // no object written
  int refused = 0;
  each_entry(objects.fd, [&](const char* dir, const struct stat& st) {
    if (!S_ISDIR(st.st_mode)) {
      if (!is_whiteout(st)) ++refused;
      return;
    }
    const ScopedFd sub{child_fs::open_exact(objects.fd, dir, O_PATH | O_DIRECTORY, kBeneath)};
    if (sub.fd < 0) return;
    each_entry(sub.fd, [&](const char* name, const struct stat& e) {
      if (is_whiteout(e)) return;  // pruned: objects stay
      // git's own temporaries, left by a command killed mid-write.
      if (::strncmp(name, "tmp_", 4) == 0 || ::strncmp(name, ".tmp-", 5) == 0) return;
      if (equal_str(dir, "pack") && ::strncmp(name, "pack-", 5) == 0) *pack = true;
      if (!S_ISREG(e.st_mode) || !is_loose_object(dir, name) ||
          add_object(real, sub.fd, dir, name) != 0)
        ++refused;
    });
  });
  return refused;
}

// --- refs/ and logs/ ---

// Merges the private layer's directory `up_dir` (at `path` below .git,
// "refs/heads" or "logs/refs/heads") into the host's: files whose names are
// refs (or logs/HEAD) with the shape given, deletions of such files, and
// directories below, to kMaxDepth. Returns how many entries were refused.
int merge_tree(int real, int up_dir, char* path, size_t len, int depth, Shape shape) {
  if (depth > kMaxDepth) return 1;
  int refused = 0;
  each_entry(up_dir, [&](const char* name, const struct stat& st) {
    const size_t n = ::strlen(name);
    if (len + 1 + n >= kMaxName) {
      ++refused;
      return;
    }
    path[len] = '/';
    ::memcpy(path + len + 1, name, n + 1);
    const size_t full = len + 1 + n;
    // The ref this file is: its path, without "logs/" for a reflog.
    const bool log = shape == Shape::text;
    const char* ref = log ? path + 5 : path;
    if (S_ISDIR(st.st_mode)) {
      const ScopedFd sub{child_fs::open_exact(up_dir, name, O_PATH | O_DIRECTORY, kBeneath)};
      if (sub.fd >= 0) refused += merge_tree(real, sub.fd, path, full, depth + 1, shape);
    } else if (!is_writable_ref(ref, ::strlen(ref)) && !(log && equal_str(ref, "HEAD"))) {
      // git's own locks and temporaries, left by a killed command, are not refs.
      if (!(n > 5 && equal_str(name + n - 5, ".lock"))) ++refused;
    } else if (is_whiteout(st)) {
      path[len] = '\0';
      const ScopedFd dir{host_dir(real, path)};
      if (dir.fd < 0 || (::unlinkat(dir.fd, name, 0) != 0 && errno != ENOENT)) ++refused;
    } else {
      struct stat up;
      const ScopedFd from{open_upper(up_dir, name, &up, log ? kMaxLog : kMaxSmall)};
      path[len] = '\0';
      const ScopedFd dir{host_dir(real, path)};
      if (from.fd < 0 || dir.fd < 0 || replace(dir.fd, name, from.fd, up, shape) != 0) ++refused;
    }
    path[len] = '\0';
  });
  return refused;
}

int merge_refs(int real, int upper, const char* top, Shape shape) {
  const ScopedFd dir{child_fs::open_exact(upper, top, O_PATH | O_DIRECTORY, kBeneath)};
  if (dir.fd < 0) return 0;
  char path[kMaxName];
  const size_t len = ::strlen(top);
  ::memcpy(path, top, len + 1);
  return merge_tree(real, dir.fd, path, len, 0, shape);
}

// --- the state files at the top ---

Shape shape_of(const char* name) {
  if (equal_str(name, "index")) return Shape::index;
  if (equal_str(name, "HEAD")) return Shape::head;
  if (equal_str(name, "FETCH_HEAD")) return Shape::fetch_head;
  if (equal_str(name, "packed-refs")) return Shape::packed_refs;
  for (const char* oids : {"ORIG_HEAD", "MERGE_HEAD", "AUTO_MERGE", "REVERT_HEAD",
                           "CHERRY_PICK_HEAD", "REBASE_HEAD", "shallow"})
    if (equal_str(name, oids)) return Shape::oids;
  return Shape::text;
}

int merge_state_file(int real, int upper, const char* name) {
  struct stat st;
  if (::fstatat(upper, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;  // untouched
  if (is_whiteout(st)) {
    // git never deletes HEAD; without it the host's git would take the
    // workspace itself for a bare repository, config and all.
    if (equal_str(name, "HEAD")) return 1;
    return ::unlinkat(real, name, 0) != 0 && errno != ENOENT ? 1 : 0;
  }
  // `shallow` hides the parents of the commits it lists (like a graft): a
  // repository that was complete stays so.
  struct stat host;
  if (equal_str(name, "shallow") && ::fstatat(real, name, &host, AT_SYMLINK_NOFOLLOW) != 0)
    return 1;
  struct stat up;
  const Shape shape = shape_of(name);
  const ScopedFd from{open_upper(upper, name, &up, shape == Shape::index ? kMaxIndex : kMaxSmall)};
  if (from.fd < 0) return 1;
  return replace(real, name, from.fd, up, shape) != 0 ? 1 : 0;
}

}  // namespace

int write_back_in_child(const Kept& k) {
  if (k.real < 0 || k.upper < 0) return 0;
  // Objects before the refs that name them, refs before the HEAD and index
  // that name refs: the host's repository is never left pointing at
  // something missing.
  bool pack = false;
  int refused = merge_objects(k.real, k.upper, &pack);
  // Refs, HEAD or an index naming objects that only a pack held, or that
  // were refused, would leave the host's repository broken: none of them
  // comes back then.
  if (pack || refused > 0) return refused + (pack ? 1 : 0);
  // packed-refs before the loose refs, as git writes them: `git pack-refs`
  // deletes the loose refs it packed, and those deletions must not land
  // without the file that holds the refs now.
  if (int packed = merge_state_file(k.real, k.upper, "packed-refs")) return refused + packed;
  refused += merge_refs(k.real, k.upper, "refs", Shape::ref);
  refused += merge_refs(k.real, k.upper, "logs", Shape::text);
  for (const char* name : kStateFiles)
    if (!equal_str(name, "packed-refs")) refused += merge_state_file(k.real, k.upper, name);
  return refused;
}

}  // namespace brig::jail::git_state
