#include "server/search/list_directory.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "jail/base/unique_fd.h"
#include "server/files/tool_path.h"
#include "server/files/utf8.h"
#include "server/search/page_cursor.h"
#include "server/search/tree_walk.h"

namespace brig::search {
namespace {

using protocol::Json;
constexpr std::string_view kListDirectoryOp = "list directory";

// A walk below the requested depth stops after this many entries, so a
// listing of a huge tree stays bounded in memory; the rest are counted as
// left out without being read.
constexpr std::size_t kMaxCollected = 200000;

struct Entry {
  std::string path;  // relative to the listed directory
  std::string type;  // file | dir | symlink | other
  std::int64_t size = -1;
  std::string target;  // symlinks
  std::string error;   // a directory that could not be read, or an entry that could not be stat'ed
  std::size_t depth = 1;
};

std::size_t depth_of(std::string_view path) {
  return 1 + static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// Path order with '/' lowest, so a tree reads depth first: "a", "a/b", "a-b".
bool tree_less(const Entry& a, const Entry& b) {
  return std::lexicographical_compare(
      a.path.begin(), a.path.end(), b.path.begin(), b.path.end(),
      [](char x, char y) { return (x == '/' ? '\0' : x) < (y == '/' ? '\0' : y); });
}

// Collects every entry down to `depth` levels as the walker reports them
// (ignore and hidden rules applied there); directories through enter().
// With depth 1 it collects one page in path order (up to `page` entries,
// none at or before `after`) and only counts the rest.
class Collector : public WalkVisitor {
 public:
  Collector(std::size_t depth, std::size_t page, std::string after)
      : depth_(depth), page_(page), after_(std::move(after)) {}

  bool enter(std::string_view path) override {
    if (!paged(path)) return false;
    if (!room()) return false;
    Entry dir;
    dir.path = std::string(path);
    dir.type = "dir";
    dir.depth = depth_of(path);
    entries_.push_back(std::move(dir));
    return entries_.back().depth < depth_;
  }

  bool visit(const WalkEntry& e) override {
    if (!paged(e.path)) return true;
    if (!room()) return false;
    Entry entry;
    entry.path = std::string(e.path);
    entry.depth = depth_of(e.path);
    struct stat st {};
    if (::fstatat(e.dir_fd, std::string(e.name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      entry.type = "other";
      entry.error = std::strerror(errno);
    } else if (S_ISREG(st.st_mode)) {
      entry.type = "file";
      entry.size = st.st_size;
    } else if (S_ISDIR(st.st_mode)) {
      entry.type = "dir";  // .git, listed but never entered
    } else if (S_ISLNK(st.st_mode)) {
      entry.type = "symlink";
      char target[PATH_MAX];
      const ssize_t n = ::readlinkat(e.dir_fd, std::string(e.name).c_str(), target, sizeof target);
      if (n >= 0) entry.target.assign(target, static_cast<std::size_t>(n));
    } else {
      entry.type = "other";
    }
    entries_.push_back(std::move(entry));
    return true;
  }

  std::vector<Entry>& entries() { return entries_; }
  bool overflowed() const { return overflowed_; }
  // Depth 1: entries after the page, counted without a stat.
  std::size_t after_page() const { return after_page_; }

 private:
  // Whether to collect `path` (depth 1 pages only; deeper listings collect
  // everything and cut shallow-first afterwards).
  bool paged(std::string_view path) {
    if (depth_ != 1) return true;
    if (!after_.empty() && path == after_) return false;  // the last page ended with it
    if (entries_.size() < page_) return true;
    ++after_page_;
    return false;
  }

  bool room() {
    if (entries_.size() < kMaxCollected) return true;
    overflowed_ = true;
    return false;
  }

  std::size_t depth_;
  std::size_t page_;
  std::string after_;
  std::vector<Entry> entries_;
  std::size_t after_page_ = 0;
  bool overflowed_ = false;
};

}  // namespace

Result<files::OpReply> list_directory_op(const Json& args, const files::OpContext& ctx) {
  const std::string path = BRIG_TRY(
      files::resolve_path(ctx.workspace, args.value("path", std::string(".")), kListDirectoryOp));
  const auto depth = static_cast<std::size_t>(BRIG_TRY(kListDepth.read(args)));
  const auto limit = static_cast<std::size_t>(BRIG_TRY(kListLimit.read(args)));

  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    Error e = sys_error(std::string(kListDirectoryOp), path, err);
    if (err == ENOTDIR) e.why = "is not a directory; use read_file to read a file";
    if (err == ENOENT) e.why = "no such file or directory";
    return std::unexpected(std::move(e));
  }
  fd.reset();
  const std::string root = real_path_or_same(path);
  const std::uint64_t query = query_hash("list_directory", root, args);
  const std::optional<PageCursor> cursor = BRIG_TRY(read_cursor(args, kListDirectoryOp, query));
  if (cursor && depth != 1) {
    return std::unexpected(Error{std::string(kListDirectoryOp), "cursor",
                                 "pages only a listing of depth 1 (give the depth of the call "
                                 "that returned the cursor)",
                                 EINVAL});
  }

  WalkOptions options;
  options.hidden = args.value("hidden", true);
  options.gitignore = options.git_exclude = options.dot_ignore = args.value("gitignore", true);
  options.ancestors_up_to = real_path_or_same(ctx.workspace);
  options.list_all = true;
  options.deadline = ctx.deadline;
  // A page starts at the entry after the cursor's: the walk skips the names
  // before it without a look (they are still read: a directory's names come
  // sorted only once all of them are read).
  if (cursor) options.start_at = cursor->path;
  TreeWalker walker(options);
  Collector collector(depth, limit, cursor ? cursor->path : std::string());
  BRIG_TRY_VOID(walker.walk(root, collector));

  std::vector<Entry>& entries = collector.entries();
  // Directories the walker could not read say why, on their own entry.
  for (const std::string& example : walker.skipped().unreadable_examples) {
    const std::size_t colon = example.find(": ");
    if (colon == std::string::npos) continue;
    for (Entry& e : entries)
      if (e.path == example.substr(0, colon)) e.error = example.substr(colon + 2);
  }
  // A capped listing keeps the shallow levels: a model sees the shape of the
  // tree before the details of one corner.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.depth != b.depth ? a.depth < b.depth : tree_less(a, b);
  });
  const std::size_t omitted =
      collector.after_page() + (entries.size() > limit ? entries.size() - limit : 0);
  entries.resize(std::min(entries.size(), limit));
  std::sort(entries.begin(), entries.end(), tree_less);

  Json list = Json::array();
  for (const Entry& e : entries) {
    Json j = {{"path", files::name_to_text(e.path)}, {"type", e.type}};
    if (e.size >= 0) j["size"] = e.size;
    if (e.type == "symlink") j["target"] = files::name_to_text(e.target);
    if (!e.error.empty()) j["error"] = e.error;
    list.push_back(std::move(j));
  }
  const bool timed_out = walker.timed_out();
  Json header = {{"path", files::name_to_text(path)},
                 {"depth", depth},
                 {"entries", std::move(list)},
                 {"listed", entries.size()},
                 {"omitted", omitted},
                 {"skipped_hidden", walker.skipped().hidden},
                 {"skipped_ignored", walker.skipped().ignored},
                 {"limit", limit},
                 {"timed_out", timed_out},
                 {"truncated", omitted > 0 || timed_out || collector.overflowed()}};
  // Depth 1 pages by name: the next page starts after the last entry shown
  // (also when the time limit cut this one short).
  if (depth == 1 && (omitted > 0 || timed_out) && !entries.empty())
    header["next_cursor"] =
        encode_cursor(PageCursor{query, entries.back().path, PageCursor::kWholeFile});
  return files::OpReply{std::move(header), {}};
}

}  // namespace brig::search
