#include "server/tools/find_files_tool.h"

#include <string>

#include <fmt/format.h>

#include "server/files/utf8.h"
#include "server/policy/tool_names.h"
#include "server/search/find_files.h"
#include "server/tools/skip_summary.h"
#include "server/tools/tool.h"

namespace brig::tools {

using protocol::Json;

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
           std::string("Directory to search: absolute, or relative to the workspace. Default: "
                       "the workspace.") +
               std::string(files::kNameEscapeNote)}}},
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
        {"limit", search::kFindLimit.schema(
                      fmt::format("Most paths to return. Default {}.", search::kDefaultFindLimit))},
        {"offset",
         search::kFindOffset.schema(
             "Paths to skip (sort \"modified\"); with sort \"path\" pass cursor instead.")},
        {"cursor",
         {{"type", "string"},
          {"description",
           "Where the next page starts: next_cursor of the previous call with the same "
           "arguments. Such a page costs only its own walk."}}}}},
      {"required", {"pattern"}},
      {"additionalProperties", false}};
  Json file = {
      {"type", "object"},
      {"properties",
       {{"path", {{"type", "string"}, {"description", "Relative to the searched path."}}},
        {"symlink", {{"type", "boolean"}}},
        {"modified", {{"type", "string"}, {"description", "UTC time, when sorted by modified."}}}}},
      {"required", {"path"}}};
  Json output = {
      {"type", "object"},
      {"properties",
       {{"path", {{"type", "string"}}},
        {"pattern", {{"type", "string"}}},
        {"sort", {{"type", "string"}, {"enum", {"path", "modified"}}}},
        {"files", {{"type", "array"}, {"items", std::move(file)}}},
        {"shown", {{"type", "integer"}}},
        {"total",
         {{"type", "integer"},
          {"description", "Paths that matched in all; only when this call saw them all."}}},
        {"offset", {{"type", "integer"}}},
        {"omitted", {{"type", "integer"}, {"description", "Matches after this page."}}},
        {"next_offset", {{"type", "integer"}}},
        {"next_cursor", {{"type", "string"}, {"description", "Pass as cursor for the next page."}}},
        {"stopped_by", {{"type", "string"}, {"enum", {"limit", "size"}}}},
        {"limit", {{"type", "integer"}}},
        {"skipped", skipped_schema()},
        {"timed_out", {{"type", "boolean"}}},
        {"truncated", {{"type", "boolean"}}}}},
      {"required", {"path", "files", "shown", "truncated", "skipped"}}};
  return protocol::ToolDescriptor{
      .name = std::string(policy::names::kFindFiles),
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
      .annotations = read_only_annotations(),
  };
}

protocol::ToolResult format_find_files(const Json& /*args*/, files::OpReply reply) {
  const Json& h = reply.header;
  std::string text;
  for (const Json& f : h.value("files", Json::array())) {
    text += f.value("path", std::string());
    if (f.value("symlink", false)) text += " (symlink)";
    if (f.contains("modified")) text += "  " + f.value("modified", std::string());
    text += '\n';
  }
  const auto shown = h.value("shown", std::size_t{0});
  const auto offset = h.value("offset", std::size_t{0});
  const std::string pattern = h.value("pattern", std::string());
  const std::string root = h.value("path", std::string());
  const bool paged = h.contains("next_cursor") || h.contains("next_offset");
  std::string s;
  if (shown == 0 && !paged) {
    const bool none = h.value("total", std::size_t{1}) == 0;
    s = fmt::format("No {}files match {} under {}.", none ? "" : "more ", pattern, root);
  } else if (h.contains("total") && shown == h.value("total", std::size_t{0})) {
    s = fmt::format("{} file{} match {} under {}.", shown, shown == 1 ? "" : "s", pattern, root);
  } else if (h.contains("total")) {
    s = fmt::format("Files {}-{} of {} matching {} under {}.", offset + (shown ? 1 : 0),
                    offset + shown, h.value("total", std::size_t{0}), pattern, root);
  } else {
    s = fmt::format("{} file{} matching {} under {}{}.", shown, shown == 1 ? "" : "s", pattern,
                    root, paged ? " in this page" : " (the last page)");
  }
  s += ' ';
  s += describe_skipped(h.value("skipped", Json::object()));
  if (h.contains("next_cursor")) {
    s += fmt::format(" More follow: call again with cursor=\"{}\"{}.",
                     h.value("next_cursor", std::string()),
                     h.value("stopped_by", std::string()) == "limit" ? " (or raise limit)" : "");
  } else if (h.contains("next_offset")) {
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

}  // namespace brig::tools
