#include "server/search/find_files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <optional>

#include <fmt/format.h>

#include "server/files/json_size.h"
#include "server/files/tool_path.h"
#include "server/files/utf8.h"
#include "server/search/file_prefetch.h"
#include "server/search/glob.h"
#include "server/search/page_cursor.h"
#include "server/search/tree_walk.h"

namespace brig::search {
namespace {

using protocol::Json;
constexpr std::string_view kFindFilesOp = "find files";

struct Found {
  std::string path;
  bool symlink = false;
  struct timespec mtime {};
};

// Collects the matches of one page. Sorted by path, the walk's own order is
// the result order, so the walk stops at the first match past the page: the
// page costs the walk up to its end, and the next page starts there.
class Finder : public WalkVisitor {
 public:
  struct Page {
    bool by_time = false;    // keep everything: the order comes after the walk
    std::size_t offset = 0;  // matches to pass over first
    std::size_t limit = 0;   // matches in the page
    std::size_t budget = 0;  // reply bytes for the page
    std::string skip_path;   // a match the cursor's page already showed
  };

  Finder(const Glob& glob, Page page) : glob_(glob), page_(std::move(page)) {}

  bool enter(std::string_view path) override { return glob_.may_match_below(path); }

  bool visit(const WalkEntry& e) override {
    if (!glob_.matches(e.path)) return true;
    if (!page_.skip_path.empty() && e.path == page_.skip_path) return true;
    ++matched_;
    if (page_.by_time) {
      Found f{std::string(e.path), e.symlink, {}};
      struct stat st {};
      if (::fstatat(e.dir_fd, std::string(e.name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        f.mtime = st.st_mtim;
      found_.push_back(std::move(f));
      return true;
    }
    if (matched_ <= page_.offset) return true;
    const std::size_t cost = files::json_string_cost(e.path) * 2 + 40;
    // The first path always goes in, so that paging always moves on.
    if (found_.size() >= page_.limit || (used_ + cost > page_.budget && !found_.empty())) {
      size_stop_ = found_.size() < page_.limit;
      next_ = std::string(e.path);
      --matched_;
      return false;
    }
    used_ += cost;
    found_.push_back(Found{std::string(e.path), e.symlink, {}});
    return true;
  }

  std::vector<Found>& found() { return found_; }
  // Matches seen, those the offset passed over included.
  std::size_t matched() const { return matched_; }
  // The first match of the next page, when the page stopped the walk.
  const std::optional<std::string>& next() const { return next_; }
  bool size_stop() const { return size_stop_; }

 private:
  const Glob& glob_;
  Page page_;
  std::vector<Found> found_;
  std::size_t matched_ = 0;
  std::size_t used_ = 0;
  std::optional<std::string> next_;
  bool size_stop_ = false;
};

std::string iso_time(const struct timespec& t) {
  struct tm tm {};
  ::gmtime_r(&t.tv_sec, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

Result<files::OpReply> find_files_op(const Json& args, const files::OpContext& ctx) {
  return find_files_with(args, ctx, FindTuning{});
}

Result<files::OpReply> find_files_with(const Json& args, const files::OpContext& ctx,
                                       FindTuning tuning) {
  const std::string resolved = BRIG_TRY(
      files::resolve_path(ctx.workspace, args.value("path", std::string(".")), kFindFilesOp));
  // Spelled as the tools list names (server/files/utf8.h), matched against
  // the names' bytes.
  const std::string pattern = args.value("pattern", std::string());
  const Glob glob = BRIG_TRY(Glob::compile(files::text_to_name(pattern).value_or(pattern)));
  const bool by_time = args.value("sort", std::string("path")) == "modified";
  const auto limit = static_cast<std::size_t>(BRIG_TRY(kFindLimit.read(args)));
  const auto offset = static_cast<std::size_t>(BRIG_TRY(kFindOffset.read(args)));

  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0) {
    const int err = errno;
    Error e = sys_error(std::string(kFindFilesOp), resolved, err);
    if (err == ENOENT) e.why = "no such file or directory";
    return std::unexpected(std::move(e));
  }
  if (!S_ISDIR(st.st_mode)) {
    return std::unexpected(Error{std::string(kFindFilesOp), resolved,
                                 "is not a directory; find_files looks under a directory",
                                 ENOTDIR});
  }
  const std::string root = real_path_or_same(resolved);
  const std::uint64_t query = query_hash("find_files", root, args);
  const std::optional<PageCursor> cursor = BRIG_TRY(read_cursor(args, kFindFilesOp, query));
  if (cursor && (by_time || offset > 0)) {
    return std::unexpected(Error{std::string(kFindFilesOp), "cursor",
                                 by_time ? "pages sort: \"modified\" by offset, not by cursor"
                                         : "give cursor or offset, not both",
                                 EINVAL});
  }

  WalkOptions options;
  options.hidden = args.contains("hidden") ? args.value("hidden", false) : glob.names_hidden();
  options.gitignore = options.git_exclude = options.dot_ignore = args.value("gitignore", true);
  options.ancestors_up_to = real_path_or_same(ctx.workspace);
  options.deadline = ctx.deadline;
  if (cursor) options.start_at = cursor->path;
  // The walk's own thread matches and collects; the others read ahead.
  options.read_ahead_threads =
      tuning.read_ahead_threads == SIZE_MAX ? usable_cores() - 1 : tuning.read_ahead_threads;
  TreeWalker walker(options);
  const std::size_t budget = ctx.max_bytes - std::min<std::size_t>(16 << 10, ctx.max_bytes / 4);
  Finder::Page page{by_time, offset, limit, budget, {}};
  if (cursor && cursor->skip == PageCursor::kWholeFile) page.skip_path = cursor->path;
  Finder finder(glob, std::move(page));
  BRIG_TRY_VOID(walker.walk(root, finder));

  std::vector<Found>& found = finder.found();
  std::size_t shown = 0, left = 0;
  bool size_stop = false;
  Json list = Json::array();
  const auto add = [&](const Found& f) {
    Json j = {{"path", files::name_to_text(f.path)}};
    if (f.symlink) j["symlink"] = true;
    if (by_time) j["modified"] = iso_time(f.mtime);
    list.push_back(std::move(j));
  };
  if (by_time) {
    // Newest first; the walk's path order breaks ties. Every match was kept.
    std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
      if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec > b.mtime.tv_sec;
      return a.mtime.tv_nsec > b.mtime.tv_nsec;
    });
    std::size_t used = 0;
    std::size_t i = std::min(offset, found.size());
    for (; i < found.size() && list.size() < limit; ++i) {
      const std::size_t cost = files::json_string_cost(found[i].path) * 2 + 80;
      if (used + cost > budget && !list.empty()) {
        size_stop = true;
        break;
      }
      used += cost;
      add(found[i]);
    }
    shown = list.size();
    left = found.size() - i;
  } else {
    for (const Found& f : found) add(f);
    shown = found.size();
    size_stop = finder.size_stop();
  }
  const bool more = by_time ? left > 0 : finder.next().has_value();
  Json h = {{"path", files::name_to_text(root)},
            {"pattern", files::name_to_text(glob.pattern())},
            {"sort", by_time ? "modified" : "path"},
            {"files", std::move(list)},
            {"shown", shown},
            {"offset", offset},
            {"limit", limit},
            {"skipped", walker.skipped().to_json()},
            {"timed_out", walker.timed_out()},
            {"truncated", more || walker.timed_out()}};
  // The whole count is known only when this call walked the whole tree: a
  // page that stops at its end leaves the rest unwalked.
  if (by_time) {
    h["total"] = found.size();
    h["omitted"] = left;
  } else if (!more && !cursor && !walker.timed_out()) {
    h["total"] = finder.matched();
    h["omitted"] = 0;
  }
  if (more) {
    if (!cursor) h["next_offset"] = offset + shown;
    if (!by_time) h["next_cursor"] = encode_cursor(PageCursor{query, *finder.next(), 0});
    h["stopped_by"] = size_stop ? "size" : "limit";
  } else if (walker.timed_out() && !by_time && !found.empty()) {
    // The deadline cut the walk: the next page starts after the last path
    // shown (a page with none offers no cursor, as it would stop there again).
    h["next_cursor"] = encode_cursor(PageCursor{query, found.back().path, PageCursor::kWholeFile});
    if (!cursor) h["next_offset"] = offset + shown;
  }
  return files::OpReply{std::move(h), {}};
}

}  // namespace brig::search
