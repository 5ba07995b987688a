#include "server/search/find_files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "server/files/json_size.h"
#include "server/files/tool_path.h"
#include "server/search/glob.h"
#include "server/search/tree_walk.h"

namespace brig::search {
namespace {

using protocol::Json;
constexpr std::string_view kWhat = "find files";

struct Found {
  std::string path;
  bool symlink = false;
  struct timespec mtime {};
};

class Finder : public WalkVisitor {
 public:
  Finder(const Glob& glob, bool by_time) : glob_(glob), by_time_(by_time) {}

  bool enter(std::string_view path) override { return glob_.may_match_below(path); }

  bool visit(const WalkEntry& e) override {
    if (!glob_.matches(e.path)) return true;
    Found f{std::string(e.path), e.symlink, {}};
    if (by_time_) {
      struct stat st {};
      if (::fstatat(e.dir_fd, std::string(e.name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        f.mtime = st.st_mtim;
    }
    found_.push_back(std::move(f));
    return true;
  }

  std::vector<Found>& found() { return found_; }

 private:
  const Glob& glob_;
  bool by_time_;
  std::vector<Found> found_;
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
  const std::string resolved =
      BRIG_TRY(files::resolve_path(ctx.workspace, args.value("path", std::string(".")), kWhat));
  const Glob glob = BRIG_TRY(Glob::compile(args.value("pattern", std::string())));
  const bool by_time = args.value("sort", std::string("path")) == "modified";
  const auto limit = static_cast<std::size_t>(BRIG_TRY(kFindLimit.read(args)));
  const auto offset = static_cast<std::size_t>(BRIG_TRY(kFindOffset.read(args)));

  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0) {
    const int err = errno;
    Error e = sys_error(std::string(kWhat), resolved, err);
    if (err == ENOENT) e.why = "no such file or directory";
    return std::unexpected(std::move(e));
  }
  if (!S_ISDIR(st.st_mode)) {
    return std::unexpected(Error{std::string(kWhat), resolved,
                                 "is not a directory; find_files looks under a directory",
                                 ENOTDIR});
  }
  const std::string root = real_path_or_same(resolved);

  WalkOptions options;
  options.hidden = args.contains("hidden") ? args.value("hidden", false) : glob.names_hidden();
  options.gitignore = options.git_exclude = options.dot_ignore = args.value("gitignore", true);
  options.ancestors_up_to = real_path_or_same(ctx.workspace);
  options.deadline = ctx.deadline;
  TreeWalker walker(options);
  Finder finder(glob, by_time);
  BRIG_TRY_VOID(walker.walk(root, finder));

  std::vector<Found>& found = finder.found();
  if (by_time) {
    // Newest first; the walk's path order breaks ties.
    std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
      if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec > b.mtime.tv_sec;
      return a.mtime.tv_nsec > b.mtime.tv_nsec;
    });
  }
  // The page: from offset, up to limit entries and the reply budget.
  const std::size_t budget = ctx.max_bytes - std::min<std::size_t>(16 << 10, ctx.max_bytes / 4);
  std::size_t used = 0;
  Json list = Json::array();
  std::size_t i = std::min(offset, found.size());
  bool size_stop = false;
  for (; i < found.size() && list.size() < limit; ++i) {
    const std::size_t cost = files::json_string_cost(found[i].path) * 2 + (by_time ? 80 : 40);
    // The first path always goes in, so that paging always moves on.
    if (used + cost > budget && !list.empty()) {
      size_stop = true;
      break;
    }
    used += cost;
    Json j = {{"path", found[i].path}};
    if (found[i].symlink) j["symlink"] = true;
    if (by_time) j["modified"] = iso_time(found[i].mtime);
    list.push_back(std::move(j));
  }
  const std::size_t shown = list.size();
  const std::size_t left = found.size() - i;
  Json h = {{"path", root},
            {"pattern", glob.pattern()},
            {"sort", by_time ? "modified" : "path"},
            {"files", std::move(list)},
            {"shown", shown},
            {"total", found.size()},
            {"offset", offset},
            {"omitted", left},
            {"limit", limit},
            {"skipped", walker.skipped().to_json()},
            {"timed_out", walker.timed_out()},
            {"truncated", left > 0 || walker.timed_out()}};
  if (left > 0) h["next_offset"] = i;
  if (size_stop)
    h["stopped_by"] = "size";
  else if (left > 0)
    h["stopped_by"] = "limit";
  return files::OpReply{std::move(h), {}};
}

}  // namespace brig::search
