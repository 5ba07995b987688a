#include "server/tools/list_directory_tool.h"

#include <string>

#include <fmt/format.h>

#include "server/files/utf8.h"
#include "server/policy/tool_names.h"
#include "server/search/list_directory.h"
#include "server/tools/denial.h"
#include "server/tools/tool.h"

namespace brig::tools {

using protocol::Json;

protocol::ToolDescriptor list_directory_descriptor() {
  Json input = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"description",
           std::string("Directory to list: absolute, or relative to the workspace. Default: "
                       "the workspace.") +
               std::string(files::kNameEscapeNote)}}},
        {"depth", search::kListDepth.schema(
                      "Levels to list; 1 (default) lists only the directory's own entries.")},
        {"hidden",
         {{"type", "boolean"}, {"description", "Include names starting with '.'. Default true."}}},
        {"gitignore",
         {{"type", "boolean"},
          {"description",
           "Leave out what .gitignore, .ignore and .git/info/exclude ignore. Default true."}}},
        {"limit", search::kListLimit.schema(fmt::format("Most entries to return. Default {}.",
                                                        search::kDefaultListLimit))},
        {"cursor",
         {{"type", "string"},
          {"description",
           "Where the next page starts (depth 1): next_cursor of the previous call with the "
           "same path and options."}}}}},
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
        {"truncated", {{"type", "boolean"}}},
        {"next_cursor",
         {{"type", "string"}, {"description", "Pass as cursor for the next page (depth 1)."}}}}},
      {"required", {"path", "entries", "listed", "omitted", "truncated"}}};
  return protocol::ToolDescriptor{
      .name = std::string(policy::names::kListDirectory),
      .title = "List directory",
      .description =
          "List a directory's entries with type (file, dir, symlink, other), size and symlink "
          "target, sorted by path; depth > 1 lists subdirectories too (a capped result keeps "
          "the shallow levels); a capped listing of depth 1 continues with next_cursor. Entries "
          "that .gitignore, .ignore or .git/info/exclude ignore "
          "are left out unless gitignore is false (as git does, inside a repository); hidden "
          "(dot) entries are included unless hidden is false; symlinks are shown, not "
          "followed, and .git is listed but not entered. The result counts what was left out. "
          "To find files by name pattern use find_files." +
          std::string(kJailPrivateNote),
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations = read_only_annotations(),
  };
}

protocol::ToolResult format_list_directory(const Json& /*args*/, files::OpReply reply) {
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
  if (h.contains("next_cursor")) {
    summary +=
        fmt::format(" {} more follow: call again with cursor=\"{}\".",
                    h.value("omitted", std::size_t{0}), h.value("next_cursor", std::string()));
  } else if (const auto omitted = h.value("omitted", std::size_t{0}); omitted > 0) {
    summary += fmt::format(
        " {} more left out by the limit of {} (the deepest go first); list a subdirectory or "
        "raise limit.",
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

}  // namespace brig::tools
