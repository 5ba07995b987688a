#include "server/files/list_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include <fmt/format.h>

#include "jail/base/unique_fd.h"
#include "server/files/path.h"

namespace brig::files {
namespace {

using protocol::Json;
constexpr std::string_view kWhat = "list directory";

struct Entry {
  std::string path;  // relative to the listed directory
  std::string type;  // file | dir | symlink | other
  std::int64_t size = -1;
  std::string target;  // symlinks
  std::string error;   // a directory that could not be read, or an entry that could not be stat'ed
};

struct Options {
  std::int64_t depth = kDefaultListDepth;
  bool hidden = true;
  bool gitignore = true;
  std::size_t limit = static_cast<std::size_t>(kDefaultListLimit);
};

std::string type_of(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "dir";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

// Path order with '/' lowest, so a tree reads depth first: "a", "a/b", "a-b".
bool tree_less(const Entry& a, const Entry& b) {
  return std::lexicographical_compare(
      a.path.begin(), a.path.end(), b.path.begin(), b.path.end(),
      [](char x, char y) { return (x == '/' ? '\0' : x) < (y == '/' ? '\0' : y); });
}

// The names in an open directory, sorted; takes ownership of fd.
Result<std::vector<std::string>> read_names(UniqueFd fd, const std::string& path) {
  DIR* dir = ::fdopendir(fd.get());
  if (dir == nullptr) return std::unexpected(sys_error(std::string(kWhat), path, errno));
  fd.release();
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* d = ::readdir(dir)) {
    if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0)
      names.emplace_back(d->d_name);
    errno = 0;
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) return std::unexpected(sys_error(std::string(kWhat), path, err));
  std::sort(names.begin(), names.end());
  return names;
}

class Walk {
 public:
  Walk(std::string root, Options options, const worker::OpContext& ctx)
      : root_(std::move(root)), options_(options), ctx_(ctx) {}

  Result<void> run(UniqueFd root_fd) {
    std::vector<std::string> names = BRIG_TRY(read_names(std::move(root_fd), root_));
    visit(names, /*dir_rel=*/"", /*depth=*/1);
    while (!queue_.empty()) {
      if (std::chrono::steady_clock::now() > ctx_.deadline) {
        timed_out_ = true;
        break;
      }
      const Pending next = queue_.front();
      queue_.pop_front();
      const std::string abs = root_ + "/" + entries_[next.entry].path;
      UniqueFd fd(::open(abs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) {
        entries_[next.entry].error = std::strerror(errno);
        continue;
      }
      auto child_names = read_names(std::move(fd), abs);
      if (!child_names) {
        entries_[next.entry].error = child_names.error().why;
        continue;
      }
      visit(*child_names, entries_[next.entry].path, next.depth);
    }
    std::sort(entries_.begin(), entries_.end(), tree_less);
    return {};
  }

  Json header() const {
    Json list = Json::array();
    for (const Entry& e : entries_) {
      Json j = {{"path", e.path}, {"type", e.type}};
      if (e.size >= 0) j["size"] = e.size;
      if (e.type == "symlink") j["target"] = e.target;
      if (!e.error.empty()) j["error"] = e.error;
      list.push_back(std::move(j));
    }
    return {{"path", root_},
            {"depth", options_.depth},
            {"entries", std::move(list)},
            {"listed", entries_.size()},
            {"omitted", omitted_},
            {"skipped_hidden", skipped_hidden_},
            {"skipped_ignored", skipped_ignored_},
            {"limit", options_.limit},
            {"timed_out", timed_out_},
            {"truncated", omitted_ > 0 || timed_out_}};
  }

 private:
  struct Pending {
    std::size_t entry;   // index of the directory's own entry
    std::int64_t depth;  // its children's level
  };

  // The entries named in one directory at `depth` (1 = the root's own).
  void visit(const std::vector<std::string>& names, const std::string& dir_rel,
             std::int64_t depth) {
    const std::string dir_abs = dir_rel.empty() ? root_ : root_ + "/" + dir_rel;
    UniqueFd dir_fd(::open(dir_abs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    for (const std::string& name : names) {
      if (!options_.hidden && name[0] == '.') {
        ++skipped_hidden_;
        continue;
      }
      Entry e;
      e.path = dir_rel.empty() ? name : dir_rel + "/" + name;
      struct stat st {};
      if (dir_fd && ::fstatat(dir_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        e.type = type_of(st.st_mode);
        if (S_ISREG(st.st_mode)) e.size = st.st_size;
        if (S_ISLNK(st.st_mode)) {
          char target[PATH_MAX];
          const ssize_t n = ::readlinkat(dir_fd.get(), name.c_str(), target, sizeof target);
          if (n >= 0) e.target.assign(target, static_cast<std::size_t>(n));
        }
      } else {
        e.type = "other";
        e.error = std::strerror(dir_fd ? errno : EBADF);
      }
      if (entries_.size() >= options_.limit) {
        ++omitted_;
        continue;
      }
      const bool descend = e.type == "dir" && depth < options_.depth && name != ".git";
      entries_.push_back(std::move(e));
      if (descend) queue_.push_back(Pending{entries_.size() - 1, depth + 1});
    }
  }

  std::string root_;
  Options options_;
  const worker::OpContext& ctx_;
  std::vector<Entry> entries_;
  std::deque<Pending> queue_;
  std::size_t omitted_ = 0;
  std::size_t skipped_hidden_ = 0;
  std::size_t skipped_ignored_ = 0;
  bool timed_out_ = false;
};

}  // namespace

Result<worker::OpReply> list_directory_op(const Json& args, const worker::OpContext& ctx) {
  const std::string path =
      BRIG_TRY(resolve_path(ctx.workspace, args.value("path", std::string(".")), kWhat));
  Options options;
  options.depth =
      std::clamp(args.value("depth", kDefaultListDepth), std::int64_t{1}, kMaxListDepth);
  options.hidden = args.value("hidden", true);
  options.gitignore = args.value("gitignore", true);
  options.limit = static_cast<std::size_t>(
      std::clamp(args.value("limit", kDefaultListLimit), std::int64_t{1}, kMaxListLimit));

  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    Error e = sys_error(std::string(kWhat), path, err);
    if (err == ENOTDIR) e.why = "is not a directory; use read_file to read a file";
    if (err == ENOENT) e.why = "no such file or directory";
    return std::unexpected(std::move(e));
  }
  Walk walk(path, options, ctx);
  BRIG_TRY_VOID(walk.run(std::move(fd)));
  return worker::OpReply{walk.header(), {}};
}

}  // namespace brig::files

namespace brig::files {

protocol::ToolDescriptor list_directory_descriptor() {
  Json input = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"description",
           "Directory to list: absolute, or relative to the workspace. Default: "
           "the workspace."}}},
        {"depth",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", kMaxListDepth},
          {"description",
           "Levels to list; 1 (default) lists only the directory's own "
           "entries."}}},
        {"hidden",
         {{"type", "boolean"}, {"description", "Include names starting with '.'. Default true."}}},
        {"gitignore",
         {{"type", "boolean"},
          {"description", "Leave out what .gitignore files ignore. Default true."}}},
        {"limit",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", kMaxListLimit},
          {"description",
           fmt::format("Most entries to return. Default {}.", kDefaultListLimit)}}}}},
      {"additionalProperties", false}};
  Json entry = {
      {"type", "object"},
      {"properties",
       {{"path", {{"type", "string"}, {"description", "Relative to the listed directory."}}},
        {"type", {{"type", "string"}, {"enum", {"file", "dir", "symlink", "other"}}}},
        {"size", {{"type", "integer"}, {"description", "Bytes; files only."}}},
        {"target", {{"type", "string"}, {"description", "Where a symlink points."}}},
        {"error", {{"type", "string"}, {"description", "Why it could not be read."}}}}},
      {"required", {"path", "type"}}};
  Json output = {
      {"type", "object"},
      {"properties",
       {{"path", {{"type", "string"}}},
        {"depth", {{"type", "integer"}}},
        {"entries", {{"type", "array"}, {"items", std::move(entry)}}},
        {"listed", {{"type", "integer"}}},
        {"omitted", {{"type", "integer"}, {"description", "Entries left out by the limit."}}},
        {"skipped_hidden", {{"type", "integer"}}},
        {"skipped_ignored", {{"type", "integer"}}},
        {"limit", {{"type", "integer"}}},
        {"timed_out", {{"type", "boolean"}}},
        {"truncated", {{"type", "boolean"}}}}},
      {"required", {"path", "entries", "listed", "omitted", "truncated"}}};
  return protocol::ToolDescriptor{
      .name = "list_directory",
      .title = "List directory",
      .description =
          "List a directory's entries with type (file, dir, symlink, other), size and symlink "
          "target, sorted by path; depth > 1 lists subdirectories too (breadth first, so a "
          "capped result keeps the shallow levels). Gitignored entries are left out unless "
          "gitignore is false; hidden (dot) entries are included unless hidden is false; "
          "symlinks are shown, not followed, and .git is not entered. The result counts what "
          "was left out. To find files by name pattern use find_files.",
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations = {{"readOnlyHint", true},
                      {"destructiveHint", false},
                      {"idempotentHint", true},
                      {"openWorldHint", false}},
  };
}

protocol::ToolResult format_list_directory(const Json& /*args*/, worker::OpReply reply) {
  const Json& h = reply.header;
  std::string text;
  for (const Json& e : h.value("entries", Json::array())) {
    const std::string path = e.value("path", std::string());
    const std::string type = e.value("type", std::string());
    if (type == "dir") {
      text += path + "/";
    } else if (type == "symlink") {
      text += fmt::format("{} -> {}", path, e.value("target", std::string()));
    } else if (type == "file") {
      text += fmt::format("{}  {}", path, e.value("size", std::int64_t{0}));
    } else {
      text += fmt::format("{}  ({})", path, type);
    }
    if (e.contains("error")) text += fmt::format("  [{}]", e.value("error", std::string()));
    text += '\n';
  }
  const std::size_t listed = h.value("listed", std::size_t{0});
  std::string summary =
      fmt::format("{}: {} entr{} (file sizes in bytes).", h.value("path", std::string()), listed,
                  listed == 1 ? "y" : "ies");
  if (const auto omitted = h.value("omitted", std::size_t{0}); omitted > 0) {
    summary += fmt::format(
        " {} more left out by the limit of {}, and deeper directories were not read; list a "
        "subdirectory or raise limit.",
        omitted, h.value("limit", std::size_t{0}));
  }
  if (h.value("timed_out", false)) summary += " Stopped at the time limit; the list is partial.";
  if (const auto n = h.value("skipped_hidden", std::size_t{0}); n > 0)
    summary += fmt::format(" {} hidden entr{} not shown (hidden: true shows them).", n,
                           n == 1 ? "y" : "ies");
  if (const auto n = h.value("skipped_ignored", std::size_t{0}); n > 0)
    summary += fmt::format(" {} gitignored entr{} not shown (gitignore: false shows them).", n,
                           n == 1 ? "y" : "ies");
  text += summary;
  protocol::ToolResult r = protocol::ToolResult::text(std::move(text));
  r.structured = h;
  return r;
}

}  // namespace brig::files
