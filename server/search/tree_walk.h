// The directory walk under find_files and search: which entries a search
// sees (hidden names, ignore files), what it skipped and why, and when it
// must stop.
#pragma once

#include <dirent.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "server/search/dir_reader.h"
#include "server/search/ignore_file.h"

namespace brig::search {

// Directories nested deeper than this below the searched one are not read
// (each level holds a file descriptor while its children are walked).
inline constexpr std::size_t kMaxWalkDepth = 128;

struct WalkOptions {
  bool hidden = false;      // include names starting with '.'
  bool gitignore = true;    // .gitignore files, inside a git repository only
  bool git_exclude = true;  // .git/info/exclude of the repository
  bool dot_ignore = true;   // .ignore files (ripgrep's), anywhere
  // Ignore files in the searched directory's ancestors apply too, up to the
  // repository root (the nearest one holding .git) or, outside a
  // repository, up to this directory (the workspace); empty: none above.
  std::string ancestors_up_to;
  // Also report what a listing shows but a search skips: ".git" (as a
  // directory or file that is never entered) and special files (fifos,
  // sockets, devices). Hidden and ignore rules still apply to them.
  bool list_all = false;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Where the walk starts, relative to the walked directory ('/'-separated;
  // empty: at the beginning). Entries before it in the walk order are not
  // looked at (only the directories on its way are read), so a page that
  // starts deep into a tree costs that page; the path need not exist any
  // more (the walk starts at the next entry in order).
  std::string start_at;
  // Threads that open and list directories ahead of the walk (dir_reader.h);
  // 0: the walk reads each directory itself. The results are the same.
  std::size_t read_ahead_threads = 0;
};

// What a walk and the operation on top of it left out, by reason. Ignored
// and hidden directories count once, not per file inside them.
struct SkipCounts {
  static constexpr std::size_t kMaxExamples = 5;

  std::size_t ignored = 0;                       // by .gitignore, .ignore or .git/info/exclude
  std::size_t hidden = 0;                        // names starting with '.'
  std::size_t symlinks = 0;                      // symlinks the operation does not follow
  std::size_t binary = 0;                        // files that are not text
  std::size_t too_large = 0;                     // files over the size limit
  std::size_t unreadable = 0;                    // permission denied, vanished, too deep
  std::size_t filtered = 0;                      // left out by include/exclude globs
  std::vector<std::string> unreadable_examples;  // "path: why", at most kMaxExamples

  void add_unreadable(std::string_view path, std::string_view why);
  // {"ignored": n, ..., "unreadable_examples": [...]} (examples only when any).
  protocol::Json to_json() const;
};

// `path` with symlinks and ".." resolved, or `path` itself when that fails;
// ancestors are found by climbing the real path.
std::string real_path_or_same(const std::string& path);

// A file or symlink the walk found.
struct WalkEntry {
  int dir_fd = -1;        // the directory that holds it, for openat
  std::string_view name;  // its name in that directory
  std::string_view path;  // relative to the walked directory, '/'-separated
  bool symlink = false;   // else a regular file
  // With WalkOptions::list_all only, for ".git" (never entered) and special
  // files: their dirent type (DT_DIR, DT_REG, DT_FIFO, DT_SOCK, DT_CHR, …).
  // DT_UNKNOWN for every entry a search sees too.
  unsigned char list_type = DT_UNKNOWN;
};

class WalkVisitor {
 public:
  virtual ~WalkVisitor() = default;
  // Whether to enter the directory at `path` (relative); a visitor that
  // says no counts the reason itself.
  virtual bool enter(std::string_view path) {
    (void)path;
    return true;
  }
  // One file or symlink, in path order (names sorted bytewise within each
  // directory, a directory's entries right after it); false stops the walk.
  virtual bool visit(const WalkEntry& entry) = 0;
};

// Walks a directory tree depth first in a fixed order (so a page of results
// is the same on every call). Rules:
//   - ".git" (directory or file) is never entered nor reported.
//   - Symlinks are reported as such, never followed: a symlinked directory is
//     not entered (no loops, no leaving the tree), and the visitor decides
//     what a symlinked file means. A directory that is its own ancestor (a
//     bind mount loop) is not entered again.
//   - An ignored directory is not entered, so nothing under it can be
//     re-included (as in git). Ignore rules decide before the hidden check,
//     and a negated rule (!.github/) brings a hidden entry back, as in
//     ripgrep. Precedence, as in ripgrep: .ignore files first, then
//     .gitignore, then .git/info/exclude; within each kind the deepest file
//     that has a matching rule decides; .gitignore rules stop at a nested
//     repository's root.
//   - The walk stops at the deadline and says so (timed_out()).
class TreeWalker {
 public:
  explicit TreeWalker(WalkOptions options);
  ~TreeWalker();
  TreeWalker(const TreeWalker&) = delete;
  TreeWalker& operator=(const TreeWalker&) = delete;

  // Walks the directory at absolute path `root`. Fails only when root
  // itself cannot be opened as a directory.
  Result<void> walk(const std::string& root, WalkVisitor& visitor);

  SkipCounts& skipped() { return skipped_; }
  const SkipCounts& skipped() const { return skipped_; }
  bool timed_out() const { return timed_out_; }
  // The visitor asked to stop.
  bool stopped() const { return stopped_; }

 private:
  struct Level;
  struct DirId {
    unsigned long dev, ino;
  };

  void load_ancestors(const std::string& root);
  void push_level(int dir_fd, std::string prefix, bool has_git, bool has_gitignore,
                  bool has_ignore);
  // `name` is the last component of `path`.
  IgnoreVerdict decide(std::string_view path, std::string_view name, bool is_dir) const;
  bool ignore_enabled() const;
  void walk_dir(DirListing listing, std::size_t depth, WalkVisitor& visitor);
  // Queues the subdirectories of `entries` the walk may enter, for reading
  // ahead; one ticket per entry (batch nullptr: not queued).
  std::vector<DirReadAhead::Ticket> read_ahead(const std::shared_ptr<const UniqueFd>& dir,
                                               const std::vector<DirEntry>& entries,
                                               std::size_t depth);
  bool past_deadline();

  WalkOptions options_;
  SkipCounts skipped_;
  std::vector<std::unique_ptr<Level>> levels_;
  std::size_t git_levels_ = 0;   // levels that hold .git
  std::string path_;             // the current entry, relative to the top ancestor
  std::size_t root_offset_ = 0;  // where paths relative to the walked directory start in path_
  std::vector<DirId> ancestors_;
  bool timed_out_ = false;
  bool stopped_ = false;
  std::size_t deadline_tick_ = 0;
  std::vector<std::string> start_parts_;  // start_at split at '/'
  bool starting_ = false;                 // still on the way to start_at
  std::unique_ptr<DirReadAhead> read_ahead_;
};

}  // namespace brig::search
