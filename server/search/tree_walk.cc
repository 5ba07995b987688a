#include "server/search/tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "jail/base/unique_fd.h"
#include "server/files/file_io.h"
#include "server/files/utf8.h"

namespace brig::search {
namespace {

// Ignore files larger than this are read only this far.
constexpr std::size_t kMaxIgnoreFileBytes = 1 << 20;

// The rules in dir_fd/name; empty when it is missing or unreadable (git
// ignores an unreadable ignore file too).
IgnoreFile load_ignore_file(int dir_fd, const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  auto text = files::read_up_to(fd.get(), kMaxIgnoreFileBytes, "read ignore file", name);
  if (!text) return {};
  return IgnoreFile::parse(*text);
}

bool exists_at(int dir_fd, const char* name) {
  struct stat st {};
  return ::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace

std::string real_path_or_same(const std::string& path) {
  char real[PATH_MAX];
  return ::realpath(path.c_str(), real) ? std::string(real) : path;
}

void SkipCounts::add_unreadable(std::string_view path, std::string_view why) {
  ++unreadable;
  if (unreadable_examples.size() < kMaxExamples)
    unreadable_examples.push_back(fmt::format("{}: {}", path, why));
}

protocol::Json SkipCounts::to_json() const {
  protocol::Json j = {{"ignored", ignored},  {"hidden", hidden},       {"symlinks", symlinks},
                      {"binary", binary},    {"too_large", too_large}, {"unreadable", unreadable},
                      {"filtered", filtered}};
  if (!unreadable_examples.empty()) {
    protocol::Json examples = protocol::Json::array();
    for (const std::string& e : unreadable_examples) examples.push_back(files::name_to_text(e));
    j["unreadable_examples"] = std::move(examples);
  }
  return j;
}

// The ignore files of one directory on the way from the top ancestor to the
// current one.
struct TreeWalker::Level {
  std::string prefix;  // the directory relative to the top ancestor, "" or "a/b/"
  bool has_git = false;
  IgnoreFile gitignore;
  IgnoreFile dot_ignore;
  IgnoreFile exclude;  // .git/info/exclude; only where has_git
};

TreeWalker::TreeWalker(WalkOptions options) : options_(std::move(options)) {}
TreeWalker::~TreeWalker() = default;

bool TreeWalker::ignore_enabled() const {
  return options_.gitignore || options_.git_exclude || options_.dot_ignore;
}

bool TreeWalker::past_deadline() {
  // The clock is cheap but not free; entries come by the hundred thousand.
  if ((++deadline_tick_ & 15) != 0) return false;
  if (std::chrono::steady_clock::now() < options_.deadline) return false;
  timed_out_ = true;
  return true;
}

void TreeWalker::push_level(int dir_fd, std::string prefix, bool has_git, bool has_gitignore,
                            bool has_ignore) {
  auto level = std::make_unique<Level>();
  level->prefix = std::move(prefix);
  level->has_git = has_git;
  if (has_gitignore && options_.gitignore)
    level->gitignore = load_ignore_file(dir_fd, ".gitignore");
  if (has_ignore && options_.dot_ignore) level->dot_ignore = load_ignore_file(dir_fd, ".ignore");
  if (has_git && options_.git_exclude)
    level->exclude = load_ignore_file(dir_fd, ".git/info/exclude");
  if (has_git) ++git_levels_;
  levels_.push_back(std::move(level));
}

void TreeWalker::load_ancestors(const std::string& root) {
  const auto holds_git = [](const std::string& dir) {
    UniqueFd probe(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    return probe && exists_at(probe.get(), ".git");
  };
  // Climb to the repository root, if there is one; else the ignore files up
  // to the limit apply (.ignore works outside repositories), when the walked
  // directory lies under it.
  std::vector<std::string> dirs;  // ancestors of root, nearest first
  bool repo = holds_git(root);
  std::size_t limit_at = root == options_.ancestors_up_to ? 0 : std::string::npos;
  for (std::string dir = root; !repo && dir != "/";) {
    dir = parent_of(dir);
    dirs.push_back(dir);
    if (dir == options_.ancestors_up_to) limit_at = dirs.size();
    repo = holds_git(dir);
  }
  if (!repo) dirs.resize(limit_at == std::string::npos ? 0 : limit_at);

  const std::string top = dirs.empty() ? root : dirs.back();
  const auto below_top = [&](const std::string& d) {
    return d.size() > top.size() ? d.substr(top == "/" ? 1 : top.size() + 1) : std::string();
  };
  // Topmost first; the walked directory's own level is pushed by walk_dir.
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) {
    UniqueFd fd(::open(d->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) continue;
    std::string prefix = below_top(*d);
    if (!prefix.empty()) prefix += '/';
    push_level(fd.get(), std::move(prefix), exists_at(fd.get(), ".git"),
               exists_at(fd.get(), ".gitignore"), exists_at(fd.get(), ".ignore"));
  }
  path_ = below_top(root);
  root_offset_ = path_.empty() ? 0 : path_.size() + 1;
}

IgnoreVerdict TreeWalker::decide(std::string_view path, std::string_view name, bool is_dir) const {
  const IgnoreFile::Name entry(name);  // once for every file that judges it
  if (options_.dot_ignore) {
    for (auto l = levels_.rbegin(); l != levels_.rend(); ++l) {
      if ((*l)->dot_ignore.empty()) continue;
      const IgnoreVerdict v =
          (*l)->dot_ignore.match(path.substr((*l)->prefix.size()), entry, is_dir);
      if (v != IgnoreVerdict::none) return v;
    }
  }
  // .gitignore counts only inside a repository, as in ripgrep and git.
  if (git_levels_ == 0) return IgnoreVerdict::none;
  if (options_.gitignore) {
    for (auto l = levels_.rbegin(); l != levels_.rend(); ++l) {
      if (!(*l)->gitignore.empty()) {
        const IgnoreVerdict v =
            (*l)->gitignore.match(path.substr((*l)->prefix.size()), entry, is_dir);
        if (v != IgnoreVerdict::none) return v;
      }
      if ((*l)->has_git) break;
    }
  }
  if (options_.git_exclude) {
    for (auto l = levels_.rbegin(); l != levels_.rend(); ++l) {
      if (!(*l)->has_git) continue;
      return (*l)->exclude.match(path.substr((*l)->prefix.size()), entry, is_dir);
    }
  }
  return IgnoreVerdict::none;
}

Result<void> TreeWalker::walk(const std::string& root, WalkVisitor& visitor) {
  UniqueFd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return std::unexpected(sys_error("walk directory", root, errno));
  if (options_.read_ahead_threads > 0 && !read_ahead_)
    read_ahead_ = DirReadAhead::start(options_.read_ahead_threads);
  if (ignore_enabled()) load_ancestors(root);
  start_parts_.clear();
  for (std::string_view rest = options_.start_at; !rest.empty();) {
    const std::size_t slash = rest.find('/');
    if (slash != 0) start_parts_.emplace_back(rest.substr(0, slash));
    rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash + 1);
  }
  starting_ = !start_parts_.empty();
  walk_dir(list_dir(std::move(fd)), 0, visitor);
  return {};
}

std::vector<DirReadAhead::Ticket> TreeWalker::read_ahead(const std::shared_ptr<const UniqueFd>& dir,
                                                         const std::vector<DirEntry>& entries,
                                                         std::size_t depth) {
  // Only what the walk is likely to enter: a hidden directory (which an
  // ignore rule may yet bring back) or one past the depth limit is read
  // when the walk gets there, if ever; one before the start is never.
  std::vector<std::string> names;
  std::vector<std::size_t> at;
  if (depth + 1 <= kMaxWalkDepth) {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const DirEntry& e = entries[i];
      if (e.type != DT_DIR || e.name == ".git") continue;
      if (!options_.hidden && e.name[0] == '.') continue;
      if (starting_ && e.name < start_parts_[std::min(depth, start_parts_.size() - 1)]) continue;
      names.emplace_back(e.name);
      at.push_back(i);
    }
  }
  std::vector<DirReadAhead::Ticket> tickets(entries.size(), DirReadAhead::Ticket{nullptr, 0});
  if (names.empty()) return tickets;
  std::vector<DirReadAhead::Ticket> queued = read_ahead_->queue(dir, std::move(names));
  for (std::size_t k = 0; k < queued.size(); ++k) tickets[at[k]] = queued[k];
  return tickets;
}

void TreeWalker::walk_dir(DirListing listing, std::size_t depth, WalkVisitor& visitor) {
  const std::string_view rel_dir =
      std::string_view(path_).substr(std::min(root_offset_, path_.size()));
  if (listing.error != 0) {
    skipped_.add_unreadable(rel_dir.empty() ? "." : rel_dir, std::strerror(listing.error));
    return;
  }
  if (listing.have_id) {
    for (const DirId& a : ancestors_) {
      if (a.dev == listing.dev && a.ino == listing.ino) {
        skipped_.add_unreadable(rel_dir, "the directory is its own ancestor (a mount loop)");
        return;
      }
    }
    ancestors_.push_back(DirId{listing.dev, listing.ino});
  }
  const std::vector<DirEntry>* entries = &listing.entries;
  // Shared with the reading threads, which open the subdirectories in it.
  const auto dir = std::make_shared<const UniqueFd>(std::move(listing.fd));
  const int dir_fd = dir->get();
  std::vector<DirReadAhead::Ticket> tickets;
  if (read_ahead_) tickets = read_ahead(dir, *entries, depth);
  const bool ignoring = ignore_enabled();
  if (ignoring) {
    bool has_git = false, has_gitignore = false, has_ignore = false;
    for (const DirEntry& e : *entries) {
      if (e.name == ".git") has_git = true;
      if (e.name == ".gitignore") has_gitignore = true;
      if (e.name == ".ignore") has_ignore = true;
    }
    std::string prefix = path_.empty() ? "" : path_ + "/";
    push_level(dir_fd, std::move(prefix), has_git, has_gitignore, has_ignore);
  }

  const std::size_t base = path_.size();
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const DirEntry& e = (*entries)[i];
    if (past_deadline() || stopped_) break;
    if (starting_) {
      // Names sort bytewise (read_dir), so everything before the start's
      // component at this depth comes before the start in the walk order.
      const int cmp = e.name.compare(start_parts_[std::min(depth, start_parts_.size() - 1)]);
      if (cmp < 0) continue;
      // Past it, or at the start itself: the walk is under way. On the way
      // (a directory that holds the start) it stays on until the next entry.
      if (cmp > 0 || depth + 1 >= start_parts_.size()) starting_ = false;
    }
    const bool git = e.name == ".git";
    if (git && !options_.list_all) continue;
    unsigned char type = e.type;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      if (::fstatat(dir_fd, e.name.data(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode)   ? DT_DIR
             : S_ISREG(st.st_mode) ? DT_REG
             : S_ISLNK(st.st_mode) ? DT_LNK
                                   : DT_UNKNOWN;
    }
    const bool special = type != DT_DIR && type != DT_REG && type != DT_LNK;
    if (special && !options_.list_all) continue;  // fifos, devices, sockets
    path_.resize(base);
    if (!path_.empty()) path_ += '/';
    path_ += e.name;
    const bool is_dir = type == DT_DIR;
    const IgnoreVerdict verdict = ignoring ? decide(path_, e.name, is_dir) : IgnoreVerdict::none;
    if (verdict == IgnoreVerdict::ignore) {
      ++skipped_.ignored;
      continue;
    }
    if (verdict == IgnoreVerdict::none && !options_.hidden && e.name[0] == '.') {
      ++skipped_.hidden;
      continue;
    }
    const std::string_view rel = std::string_view(path_).substr(root_offset_);
    if (git || special) {
      WalkEntry listed{dir_fd, e.name, rel, type == DT_LNK};
      listed.list_type = type;
      if (!visitor.visit(listed)) {
        stopped_ = true;
        break;
      }
      continue;
    }
    if (is_dir) {
      if (!visitor.enter(rel)) continue;
      if (depth + 1 > kMaxWalkDepth) {
        skipped_.add_unreadable(rel, fmt::format("deeper than {} levels", kMaxWalkDepth));
        continue;
      }
      DirListing child;
      if (!tickets.empty() && tickets[i].batch != nullptr) {
        child = read_ahead_->take(tickets[i]);
        tickets[i].batch = nullptr;
      } else {
        child = open_and_list(dir_fd, e.name.data());
      }
      if (!child.fd) {
        // ELOOP/ENOTDIR: replaced by a symlink or file since it was listed.
        skipped_.add_unreadable(rel, std::strerror(child.error));
        continue;
      }
      walk_dir(std::move(child), depth + 1, visitor);
      continue;
    }
    const WalkEntry entry{dir_fd, e.name, rel, type == DT_LNK};
    if (!visitor.visit(entry)) {
      stopped_ = true;
      break;
    }
  }
  path_.resize(base);
  // Subdirectories read ahead that the walk skipped (ignored, filtered,
  // stopped before them).
  for (const DirReadAhead::Ticket& t : tickets)
    if (t.batch != nullptr) read_ahead_->drop(t);
  if (ignoring) {
    if (levels_.back()->has_git) --git_levels_;
    levels_.pop_back();
  }
  if (listing.have_id) ancestors_.pop_back();
}

}  // namespace brig::search
