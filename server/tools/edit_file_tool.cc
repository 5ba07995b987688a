#include "server/tools/edit_file_tool.h"

#include <string>

#include <fmt/format.h>

#include "server/files/edit_file.h"
#include "server/files/utf8.h"
#include "server/policy/tool_names.h"
#include "server/tools/denial.h"

namespace brig::tools {

using protocol::Json;

protocol::ToolDescriptor edit_file_descriptor() {
  Json edit = {
      {"type", "object"},
      {"properties",
       {{"old_text",
         {{"type", "string"},
          {"description", "Exact text to replace, including whitespace and indentation."}}},
        {"new_text", {{"type", "string"}, {"description", "Replacement text."}}},
        {"replace_all",
         {{"type", "boolean"},
          {"description",
           "Replace every occurrence instead of requiring exactly one. Default "
           "false."}}}}},
      {"required", {"old_text", "new_text"}},
      {"additionalProperties", false}};
  Json input = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"description", std::string("File to edit: absolute, or relative to the workspace.") +
                              std::string(files::kNameEscapeNote)}}},
        {"edits",
         {{"type", "array"},
          {"items", std::move(edit)},
          {"minItems", 1},
          {"description", "Replacements applied in order, each to the result of the previous."}}},
        {"dry_run",
         {{"type", "boolean"},
          {"description", "Only return the diff; write nothing. Default false."}}}}},
      {"required", {"path", "edits"}},
      {"additionalProperties", false}};
  Json output = {
      {"type", "object"},
      {"properties",
       {{"path", {{"type", "string"}}},
        {"dry_run", {{"type", "boolean"}}},
        {"changed", {{"type", "boolean"}, {"description", "The edits change the file."}}},
        {"written", {{"type", "boolean"}, {"description", "The file was written."}}},
        {"replacements",
         {{"type", "array"},
          {"items", {{"type", "integer"}}},
          {"description", "Per edit, how many occurrences it replaced."}}},
        {"lines_added", {{"type", "integer"}}},
        {"lines_removed", {{"type", "integer"}}},
        {"line_endings", {{"type", "string"}, {"enum", {"lf", "crlf"}}}},
        {"bom", {{"type", "boolean"}}},
        {"diff_truncated", {{"type", "boolean"}}}}},
      {"description",
       "What the edit did; the unified diff (3 lines of context) is the result's first text "
       "block when anything changed, not repeated here."},
      {"required", {"path", "dry_run", "changed", "written", "replacements"}}};
  return protocol::ToolDescriptor{
      .name = std::string(policy::names::kEditFile),
      .title = "Edit file",
      .description =
          "Change part of a text file by exact-text replacement and get a unified diff back. "
          "Each edit's old_text must occur exactly once (add surrounding lines to make it "
          "unique) unless replace_all is set; edits apply in order, and if any fails nothing is "
          "written and the error names the edit and how many matches it found. Line endings "
          "(CRLF files may be edited with \\n), a UTF-8 BOM and the file mode are kept; the "
          "write is atomic. dry_run shows the diff without writing. Read the file first so "
          "old_text matches exactly." +
          std::string(kJailPrivateNote),
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations = protocol::tool_annotations(/*read_only=*/false, /*destructive=*/true,
                                                /*idempotent=*/false,
                                                /*open_world=*/false),
  };
}

protocol::ToolResult format_edit_file(const Json& /*args*/, files::OpReply reply) {
  const Json& h = reply.header;
  const std::string path = h.value("path", std::string());
  std::int64_t replaced = 0;
  for (const Json& n : h.value("replacements", Json::array())) replaced += n.get<std::int64_t>();
  std::string summary;
  if (!h.value("changed", false)) {
    summary = fmt::format("No change: the edits leave {} as it was.", path);
  } else {
    summary = fmt::format("{} {}: {} replacement{}, +{} -{} lines.",
                          h.value("written", false) ? "Edited" : "Dry run, not written:", path,
                          replaced, replaced == 1 ? "" : "s", h.value("lines_added", 0),
                          h.value("lines_removed", 0));
  }
  if (h.value("diff_truncated", false)) summary += " The diff was cut at the size limit.";
  protocol::ToolResult r;
  // The diff travels once, as the text block (docs/tools.md, "One copy").
  Json structured = h;
  if (!reply.bytes.empty()) r.add_text(std::move(reply.bytes));
  r.add_text(std::move(summary));
  r.structured = std::move(structured);
  return r;
}

}  // namespace brig::tools
