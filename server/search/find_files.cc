#include "server/search/find_files.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "server/files/tool_path.h"
#include "server/search/glob.h"
#include "server/search/json_size.h"
#include "server/search/skip_summary.h"
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

Result<worker::OpReply> find_files_op(const Json& args, const worker::OpContext& ctx) {
  const std::string resolved =
      BRIG_TRY(files::resolve_path(ctx.workspace, args.value("path", std::string(".")), kWhat));
  const Glob glob = BRIG_TRY(Glob::compile(args.value("pattern", std::string())));
  const bool by_time = args.value("sort", std::string("path")) == "modified";
  const auto limit = static_cast<std::size_t>(
      std::clamp(args.value("limit", kDefaultFindLimit), std::int64_t{1}, kMaxFindLimit));
  const auto offset =
      static_cast<std::size_t>(std::max(args.value("offset", std::int64_t{0}), std::int64_t{0}));

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
    const std::size_t cost = json_string_cost(found[i].path) * 2 + (by_time ? 80 : 40);
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
  return worker::OpReply{std::move(h), {}};
}

protocol::ToolDescriptor find_files_descriptor() {
  Json input = {
      {"type", "object"},
      {"properties",
       {{"pattern",
         {{"type", "string"},
          {"minLength", 1},
          {"description",
           "Glob: * and ? stay within a name, ** spans directories, [abc] and {a,b} "
           "alternatives. Without '/' it matches file names at any depth (\"*.py\"); with '/' "
           "the path relative to `path` (\"src/**/*.ts\", \"src/{a,b}/*\")."}}},
        {"path",
         {{"type", "string"},
          {"description",
           "Directory to search: absolute, or relative to the workspace. Default: the "
           "workspace."}}},
        {"hidden",
         {{"type", "boolean"},
          {"description",
           "Include hidden files and directories (names starting with '.'). Default false, or "
           "true when the pattern itself names one (\".github/**\", \".env\")."}}},
        {"gitignore",
         {{"type", "boolean"},
          {"description",
           "Skip what .gitignore, .ignore and .git/info/exclude ignore. Default true."}}},
        {"sort",
         {{"type", "string"},
          {"enum", {"path", "modified"}},
          {"description", "\"path\" (default) or \"modified\" (newest first)."}}},
        {"limit",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", kMaxFindLimit},
          {"description", fmt::format("Most paths to return. Default {}.", kDefaultFindLimit)}}},
        {"offset",
         {{"type", "integer"},
          {"minimum", 0},
          {"description", "Paths to skip: pass next_offset from the previous call."}}}}},
      {"required", {"pattern"}},
      {"additionalProperties", false}};
  Json file = {
      {"type", "object"},
      {"properties",
       {{"path", {{"type", "string"}, {"description", "Relative to the searched path."}}},
        {"symlink", {{"type", "boolean"}}},
        {"modified", {{"type", "string"}, {"description", "UTC time, when sorted by modified."}}}}},
      {"required", {"path"}}};
  Json output = {{"type", "object"},
                 {"properties",
                  {{"path", {{"type", "string"}}},
                   {"pattern", {{"type", "string"}}},
                   {"sort", {{"type", "string"}, {"enum", {"path", "modified"}}}},
                   {"files", {{"type", "array"}, {"items", std::move(file)}}},
                   {"shown", {{"type", "integer"}}},
                   {"total", {{"type", "integer"}, {"description", "Paths that matched in all."}}},
                   {"offset", {{"type", "integer"}}},
                   {"omitted", {{"type", "integer"}, {"description", "Matches after this page."}}},
                   {"next_offset", {{"type", "integer"}}},
                   {"stopped_by", {{"type", "string"}, {"enum", {"limit", "size"}}}},
                   {"limit", {{"type", "integer"}}},
                   {"skipped", skipped_schema()},
                   {"timed_out", {{"type", "boolean"}}},
                   {"truncated", {{"type", "boolean"}}}}},
                 {"required", {"path", "files", "total", "omitted", "truncated", "skipped"}}};
  return protocol::ToolDescriptor{
      .name = "find_files",
      .title = "Find files",
      .description =
          "Find files by glob pattern (\"**/*.cpp\", \"src/{a,b}/*.h\") under a directory; "
          "paths come back relative to it, sorted by path or by modification time. Respects "
          ".gitignore/.ignore and skips hidden files unless told otherwise, and says what it "
          "skipped; symlinks are listed, not followed. Capped by limit; a capped result gives "
          "next_offset. To search file contents use search; to list one directory use "
          "list_directory.",
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations =
          protocol::tool_annotations(/*read_only=*/true, /*destructive=*/false, /*idempotent=*/true,
                                     /*open_world=*/false),
  };
}

protocol::ToolResult format_find_files(const Json& /*args*/, worker::OpReply reply) {
  const Json& h = reply.header;
  std::string text;
  for (const Json& f : h.value("files", Json::array())) {
    text += f.value("path", std::string());
    if (f.value("symlink", false)) text += " (symlink)";
    if (f.contains("modified")) text += "  " + f.value("modified", std::string());
    text += '\n';
  }
  const auto total = h.value("total", std::size_t{0});
  const auto shown = h.value("shown", std::size_t{0});
  const auto offset = h.value("offset", std::size_t{0});
  const std::string pattern = h.value("pattern", std::string());
  const std::string root = h.value("path", std::string());
  std::string s;
  if (total == 0) {
    s = fmt::format("No files match {} under {}.", pattern, root);
  } else if (shown == total) {
    s = fmt::format("{} file{} match {} under {}.", total, total == 1 ? "" : "s", pattern, root);
  } else {
    s = fmt::format("Files {}-{} of {} matching {} under {}.", offset + (shown ? 1 : 0),
                    offset + shown, total, pattern, root);
  }
  s += ' ';
  s += describe_skipped(h.value("skipped", Json::object()));
  if (h.contains("next_offset")) {
    s += fmt::format(" {} more: call again with offset={}{}.", h.value("omitted", std::size_t{0}),
                     h.value("next_offset", std::size_t{0}),
                     h.value("stopped_by", std::string()) == "limit" ? " (or raise limit)" : "");
  }
  if (h.value("timed_out", false))
    s += " The time limit stopped the walk: the list is partial; narrow path or pattern.";
  text += s;
  protocol::ToolResult r = protocol::ToolResult::text(std::move(text));
  r.structured = h;
  return r;
}

}  // namespace brig::search
