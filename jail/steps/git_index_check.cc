#include "jail/steps/git_index_check.h"

#include <limits.h>
#include <string.h>

namespace brig::jail::git_index {
namespace {

constexpr size_t kHeaderSize = 12;
constexpr size_t kStatSize = 40;  // ctime, mtime (sec, nsec), dev, ino, mode, uid, gid, size
constexpr size_t kPathMax = PATH_MAX;

constexpr uint16_t kAssumeValid = 0x8000;
constexpr uint16_t kExtended = 0x4000;
constexpr uint16_t kNameMask = 0x0fff;
constexpr uint16_t kSkipWorktree = 0x4000;  // in the extended flags
constexpr uint16_t kIntentToAdd = 0x2000;   // in the extended flags

constexpr uint32_t kModeRegular = 0100644;
constexpr uint32_t kModeExecutable = 0100755;
constexpr uint32_t kModeSymlink = 0120000;
constexpr uint32_t kModeGitlink = 0160000;

constexpr uint32_t kIeotVersion = 1;

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
uint16_t be16(const unsigned char* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

constexpr uint32_t sig(const char (&s)[5]) {
  return (uint32_t{static_cast<unsigned char>(s[0])} << 24) |
         (uint32_t{static_cast<unsigned char>(s[1])} << 16) |
         (uint32_t{static_cast<unsigned char>(s[2])} << 8) | static_cast<unsigned char>(s[3]);
}

int lower(int c) {
  return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

// --- Paths (rule 2) ---

// The code points HFS+ ignores in names (utf8.c next_hfs_char), all three
// bytes long in UTF-8; git rejects longer (overlong) spellings as malformed.
bool hfs_ignorable(const unsigned char* p, const unsigned char* end) {
  if (end - p < 3) return false;
  if (p[0] == 0xe2 && p[1] == 0x80)  // U+200C..U+200F, U+202A..U+202E
    return (p[2] >= 0x8c && p[2] <= 0x8f) || (p[2] >= 0xaa && p[2] <= 0xae);
  if (p[0] == 0xe2 && p[1] == 0x81) return p[2] >= 0xaa && p[2] <= 0xaf;  // U+206A..U+206F
  return p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf;                    // U+FEFF
}

// The bytes of one path segment as HFS+ compares them: ignorable code points
// skipped. next() is -1 at the end. Matching NTFS spellings on this view too
// refuses a little more than each filesystem alone would (".g\u200cit "),
// never less.
struct Segment {
  const unsigned char* p;
  const unsigned char* end;
  int next() {
    while (p < end) {
      if (hfs_ignorable(p, end)) {
        p += 3;
        continue;
      }
      return *p++;
    }
    return -1;
  }
};

// Consumes `word` (lower-case ASCII) from `s`, in any ASCII case.
bool take_word(Segment& s, const char* word) {
  for (; *word; ++word)
    if (lower(s.next()) != *word) return false;
  return true;
}

// What NTFS drops or stops at after a name: trailing spaces and dots, and
// ':' (an alternate data stream, path.c is_ntfs_dotgit()).
bool only_ntfs_trailer(Segment s) {
  for (;;) {
    const int c = s.next();
    if (c < 0 || c == ':') return true;
    if (c != ' ' && c != '.') return false;
  }
}

// .git on Linux, NTFS (trailing spaces/dots, ':', the short name git~1) or
// HFS+ (ignorable code points).
bool is_dotgit(Segment seg) {
  Segment s = seg;
  if (take_word(s, ".git") && only_ntfs_trailer(s)) return true;
  s = seg;
  return take_word(s, "git~1") && only_ntfs_trailer(s);
}

// .gitmodules, for symlinks: the name itself, its NTFS short names
// ("gitmod~1".."gitmod~4", and the hashed fall-back "gi7eba~N" of up to eight
// characters, path.c is_ntfs_dot_generic()) and HFS+ spellings.
bool is_dotgitmodules(Segment seg) {
  Segment s = seg;
  if (take_word(s, ".gitmodules") && only_ntfs_trailer(s)) return true;
  s = seg;
  if (take_word(s, "gitmod~")) {
    const int c = s.next();
    if (c >= '1' && c <= '4' && only_ntfs_trailer(s)) return true;
  }
  // Fall-back short name: up to six characters of "gi7eba", '~', a digit
  // 1-9, then digits, eight characters in all.
  static constexpr char kShort[] = "gi7eba";
  s = seg;
  bool saw_tilde = false;
  for (int i = 0; i < 8; ++i) {
    const int c = s.next();
    if (c < 0) return false;
    if (saw_tilde) {
      if (c < '0' || c > '9') return false;
    } else if (c == '~') {
      const int d = s.next();
      ++i;
      if (d < '1' || d > '9') return false;
      saw_tilde = true;
    } else if (i >= 6 || c >= 0x80 || lower(c) != kShort[i]) {
      return false;
    }
  }
  return only_ntfs_trailer(s);
}

bool safe_path(const unsigned char* path, size_t len, uint32_t mode) {
  if (len == 0) return false;
  const unsigned char* const end = path + len;
  for (const unsigned char* p = path; p < end; ++p)
    if (*p < 0x20) return false;
  const unsigned char* comp = path;
  for (;;) {
    const unsigned char* comp_end = comp;
    while (comp_end < end && *comp_end != '/') ++comp_end;
    const size_t n = static_cast<size_t>(comp_end - comp);
    // Covers a leading '/', "//" and a trailing '/'.
    if (n == 0) return false;
    if (comp[0] == '.' && (n == 1 || (n == 2 && comp[1] == '.'))) return false;
    // git with core.protectNTFS (the default) also checks after each '\\'.
    const unsigned char* seg = comp;
    for (;;) {
      const unsigned char* seg_end = seg;
      while (seg_end < comp_end && *seg_end != '\\') ++seg_end;
      if (is_dotgit({seg, seg_end})) return false;
      if (mode == kModeSymlink && is_dotgitmodules({seg, seg_end})) return false;
      if (seg_end == comp_end) break;
      seg = seg_end + 1;
    }
    if (comp_end == end) return true;
    comp = comp_end + 1;
  }
}

// --- Entries (rules 1 and 3) ---

struct Layout {
  const unsigned char* data;
  size_t end;  // where the trailer starts
  size_t hash_size;
  uint32_t version;
  uint32_t count;
};

// Walks the entries in order, rebuilding each full path in `path`.
struct Cursor {
  size_t pos = kHeaderSize;
  size_t path_len = 0;  // the previous entry's path, in `path`
  unsigned prev_stage = 0;
  uint32_t index = 0;
  unsigned char path[kPathMax + 1];
  void reset() {
    pos = kHeaderSize;
    path_len = 0;
    prev_stage = 0;
    index = 0;
  }
};

// What one entry was, for the caller's checks.
struct Entry {
  uint32_t mode;
  uint16_t flags;
  uint16_t xflags;
  bool sorted;      // strictly after the previous entry by (name, stage)
  bool keeps_none;  // v4: nothing of the previous name is kept
};

// memcmp order, then shorter first (read-cache.c cache_name_stage_compare).
int compare_names(const unsigned char* a, size_t a_len, const unsigned char* b, size_t b_len) {
  const int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
  if (c != 0) return c;
  return a_len < b_len ? -1 : a_len > b_len ? 1 : 0;
}

// The entry's fixed part at `start`: mode, flags and extended flags; *p is
// set past them, at the name.
Verdict read_entry_head(const Layout& l, size_t start, Entry& e, size_t* p_out) {
  const unsigned char* const d = l.data;
  size_t p = start + kStatSize + l.hash_size + 2;
  if (p > l.end) return Verdict::truncated;
  e.mode = be32(d + start + 24);
  e.flags = be16(d + start + kStatSize + l.hash_size);
  e.xflags = 0;
  if (e.flags & kExtended) {
    if (l.version < 3) return Verdict::bad_entry;
    if (p + 2 > l.end) return Verdict::truncated;
    e.xflags = be16(d + p);
    p += 2;
    // Bits git does not know make it die (create_from_disk).
    if (e.xflags & ~(kSkipWorktree | kIntentToAdd)) return Verdict::bad_entry;
  }
  if (e.mode != kModeRegular && e.mode != kModeExecutable && e.mode != kModeSymlink &&
      e.mode != kModeGitlink)
    return Verdict::bad_entry;
  *p_out = p;
  return Verdict::ok;
}

// An entry's path: `keep` bytes of the previous one, then `suffix`.
struct EntryName {
  size_t keep = 0;
  const unsigned char* suffix = nullptr;
  size_t suffix_len = 0;
};

// Version 4: N bytes to strip from the previous path, in git's varint
// (varint.c): each continuation adds one before shifting, so every value has
// one spelling. Values past kPathMax cannot be valid here; stopping there
// also keeps the arithmetic from overflowing (git treats overflow as 0
// without moving on, which this check would read differently).
Verdict read_v4_name(const Layout& l, size_t p, size_t name_len, Cursor& cur, Entry& e,
                     EntryName& n) {
  const unsigned char* const d = l.data;
  if (p >= l.end) return Verdict::truncated;
  unsigned c = d[p++];
  size_t strip = c & 127;
  while (c & 128) {
    if (p >= l.end) return Verdict::truncated;
    c = d[p++];
    strip = ((strip + 1) << 7) + (c & 127);
    if (strip > kPathMax) return Verdict::bad_entry;
  }
  if (strip > cur.path_len) return Verdict::bad_entry;
  n.keep = cur.path_len - strip;
  e.keeps_none = n.keep == 0;
  n.suffix = d + p;
  const void* nul = memchr(n.suffix, 0, l.end - p);
  if (nul == nullptr) return Verdict::truncated;
  n.suffix_len = static_cast<size_t>(static_cast<const unsigned char*>(nul) - n.suffix);
  // git takes the length from the flags and copies that many bytes: they
  // must agree with the NUL.
  const size_t full = n.keep + n.suffix_len;
  if (name_len < kNameMask ? full != name_len : full < kNameMask) return Verdict::bad_entry;
  cur.pos = p + n.suffix_len + 1;
  return Verdict::ok;
}

// Versions 2 and 3: the whole path, then 1-8 NULs to a multiple of 8
// (read-cache.c ondisk_cache_entry_size).
Verdict read_padded_name(const Layout& l, size_t start, size_t p, size_t name_len, Cursor& cur,
                         Entry& e, EntryName& n) {
  const unsigned char* const d = l.data;
  e.keeps_none = true;
  n.suffix = d + p;
  if (name_len < kNameMask) {
    if (p + name_len + 1 > l.end) return Verdict::truncated;
    if (memchr(n.suffix, 0, name_len) != nullptr || n.suffix[name_len] != 0)
      return Verdict::bad_entry;
    n.suffix_len = name_len;
  } else {
    const void* nul = memchr(n.suffix, 0, l.end - p);
    if (nul == nullptr) return Verdict::truncated;
    n.suffix_len = static_cast<size_t>(static_cast<const unsigned char*>(nul) - n.suffix);
    if (n.suffix_len < kNameMask) return Verdict::bad_entry;
  }
  const size_t fixed = p - start;
  const size_t next = start + ((fixed + n.suffix_len + 8) & ~size_t{7});
  if (next > l.end) return Verdict::truncated;
  for (size_t i = p + n.suffix_len; i < next; ++i)
    if (d[i] != 0) return Verdict::bad_entry;
  cur.pos = next;
  return Verdict::ok;
}

// Whether the entry sorts after the previous one, and its path made the
// cursor's.
void record_path(const EntryName& n, Cursor& cur, Entry& e) {
  const unsigned stage = (e.flags >> 12) & 3;
  if (cur.index == 0) {
    e.sorted = true;
  } else {
    // The kept prefix is equal on both sides; compare the rest.
    const int c = compare_names(cur.path + n.keep, cur.path_len - n.keep, n.suffix, n.suffix_len);
    e.sorted = c < 0 || (c == 0 && cur.prev_stage < stage);
  }
  memcpy(cur.path + n.keep, n.suffix, n.suffix_len);
  cur.path_len = n.keep + n.suffix_len;
  cur.path[cur.path_len] = 0;
  cur.prev_stage = stage;
  ++cur.index;
}

// Reads the entry at cur.pos and moves past it.
Verdict next_entry(const Layout& l, Cursor& cur, Entry& e) {
  const size_t start = cur.pos;
  size_t p = 0;
  if (Verdict v = read_entry_head(l, start, e, &p); v != Verdict::ok) return v;
  const size_t name_len = e.flags & kNameMask;
  EntryName n;
  const Verdict v = l.version == 4 ? read_v4_name(l, p, name_len, cur, e, n)
                                   : read_padded_name(l, start, p, name_len, cur, e, n);
  if (v != Verdict::ok) return v;
  if (n.keep + n.suffix_len > kPathMax) return Verdict::unsafe_path;
  record_path(n, cur, e);
  return Verdict::ok;
}

// --- Extensions (rule 4) ---

// IEOT: version 1, then (offset, count) blocks that must start at entries, in
// order, and cover every entry.
bool ieot_agrees(const Layout& l, Cursor& cur, const unsigned char* ext, uint32_t size) {
  if (size < 12 || (size - 4) % 8 != 0 || be32(ext) != kIeotVersion) return false;
  cur.reset();
  Entry e;
  for (uint32_t off = 4; off < size; off += 8) {
    const uint32_t at = be32(ext + off);
    const uint32_t n = be32(ext + off + 4);
    if (n == 0 || n > l.count - cur.index || at != cur.pos) return false;
    for (uint32_t i = 0; i < n; ++i) {
      if (next_entry(l, cur, e) != Verdict::ok) return false;
      // A threaded reader starts the block with no previous name.
      if (i == 0 && !e.keeps_none) return false;
    }
  }
  return cur.index == l.count;
}

// Walks one reading of the file (one hash size). With judge false, only the
// structure is read: whether the file parses with this hash size at all.
Verdict walk(const unsigned char* data, size_t size, size_t hash_size, bool judge, Cursor& cur,
             size_t* entries_end_out = nullptr) {
  if (size < kHeaderSize + hash_size) return Verdict::truncated;
  if (memcmp(data, "DIRC", 4) != 0) return Verdict::bad_header;
  const Layout l{data, size - hash_size, hash_size, be32(data + 4), be32(data + 8)};
  if (l.version < 2 || l.version > 4) return Verdict::bad_header;

  // What the first entry that breaks rule 1, 2 or 3 (beyond structure)
  // breaks. Reported after the extensions: under "link" or "sdir" the entries
  // mean something else (a split index's names are empty).
  Verdict entries = Verdict::ok;
  cur.reset();
  Entry e;
  for (uint32_t i = 0; i < l.count; ++i) {
    const Verdict v = next_entry(l, cur, e);
    if (v != Verdict::ok) return v;
    if (!judge || entries != Verdict::ok) continue;
    if ((e.flags & kAssumeValid) || (e.xflags & kSkipWorktree))
      entries = Verdict::hidden_flag;
    else if (!safe_path(cur.path, cur.path_len, e.mode))
      entries = Verdict::unsafe_path;
    else if (!e.sorted)
      entries = Verdict::bad_entry;
  }

  const size_t entries_end = cur.pos;
  if (entries_end_out) *entries_end_out = entries_end;
  bool bad_extension = false;
  for (size_t p = entries_end; p < l.end;) {
    if (l.end - p < 8) return Verdict::truncated;
    const uint32_t name = be32(data + p);
    const uint32_t ext_size = be32(data + p + 4);
    if (ext_size > l.end - p - 8) return Verdict::truncated;
    const unsigned char* ext = data + p + 8;
    const size_t next = p + 8 + ext_size;
    if (name == sig("TREE") || name == sig("REUC")) {
      // Allowed; see the header for what their contents are not checked for.
    } else if (name == sig("EOIE")) {
      // Last, and pointing at where the extensions start.
      if (next != l.end || ext_size != 4 + hash_size || be32(ext) != entries_end)
        bad_extension = true;
    } else if (name == sig("IEOT")) {
      // Checked after the walk: it re-reads the entries with `cur`.
    } else {
      bad_extension = true;
    }
    p = next;
  }
  if (!judge) return Verdict::ok;
  if (bad_extension) return Verdict::extension;
  if (entries != Verdict::ok) return entries;
  for (size_t p = entries_end; p < l.end;) {
    const uint32_t ext_size = be32(data + p + 4);
    if (be32(data + p) == sig("IEOT") && !ieot_agrees(l, cur, data + p + 8, ext_size))
      return Verdict::extension;
    p += 8 + ext_size;
  }
  return Verdict::ok;
}

}  // namespace

Verdict check(const unsigned char* data, size_t size, Parsed* parsed) {
  // One cursor for every pass: its path buffer is the only large thing here.
  Cursor cur;
  size_t sha1_end = 0, sha256_end = 0;
  const Verdict sha1 = walk(data, size, 20, false, cur, &sha1_end);
  const Verdict sha256 = walk(data, size, 32, false, cur, &sha256_end);
  if (sha1 != Verdict::ok && sha256 != Verdict::ok) return sha1;
  if (parsed != nullptr)
    *parsed = sha1 == Verdict::ok ? Parsed{20, sha1_end} : Parsed{32, sha256_end};
  // The host reads the index with its repository's hash: every reading that
  // parses must be safe.
  if (sha1 == Verdict::ok) {
    const Verdict v = walk(data, size, 20, true, cur);
    if (v != Verdict::ok) return v;
  }
  if (sha256 == Verdict::ok) return walk(data, size, 32, true, cur);
  return Verdict::ok;
}

bool clear_stat_data(unsigned char* data, size_t size, const Parsed& parsed) {
  if (size < kHeaderSize + parsed.hash_size) return false;
  const Layout l{data, size - parsed.hash_size, parsed.hash_size, be32(data + 4), be32(data + 8)};
  Cursor cur;
  Entry e;
  for (uint32_t i = 0; i < l.count; ++i) {
    const size_t start = cur.pos;
    if (next_entry(l, cur, e) != Verdict::ok) return false;
    // ctime, mtime, dev, ino: zero; mode (offset 24) kept; uid, gid, size: zero.
    memset(data + start, 0, 24);
    memset(data + start + 28, 0, kStatSize - 28);
  }
  return cur.pos == parsed.entries_end;
}

const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::ok:
      return "the index is one brig can write back";
    case Verdict::truncated:
      return "the index file is cut short";
    case Verdict::bad_header:
      return "the file is not a git index of version 2, 3 or 4";
    case Verdict::bad_entry:
      return "an index entry is malformed or out of order";
    case Verdict::unsafe_path:
      return "an entry's path is not one git would check out";
    case Verdict::hidden_flag:
      return "an entry is marked assume-unchanged or skip-worktree, which hides it from git status";
    case Verdict::extension:
      return "the index has an extension brig does not accept (split index, untracked cache, "
             "fsmonitor, sparse index, or an unknown one)";
  }
  return "unknown verdict";
}

}  // namespace brig::jail::git_index
