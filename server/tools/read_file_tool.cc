#include "server/tools/read_file_tool.h"

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "server/files/base64.h"
#include "server/files/read_file.h"
#include "server/files/utf8.h"
#include "server/policy/tool_names.h"
#include "server/tools/denial.h"
#include "server/tools/tool.h"

namespace brig::tools {

using protocol::Json;

namespace {

std::string plural(std::int64_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

protocol::ToolDescriptor read_file_descriptor() {
  Json input = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"description", std::string("File to read: absolute, or relative to the workspace.") +
                              std::string(files::kNameEscapeNote)}}},
        {"offset", files::kReadOffset.schema("First line to return (1-based). Default 1.")},
        {"limit", files::kReadLimit.schema(fmt::format("How many lines to return. Default {}.",
                                                       files::kDefaultReadLines))},
        {"encoding",
         {{"type", "string"},
          {"enum", {"text", "base64"}},
          {"description",
           "\"text\" (default): lines of a text file; images come back as images. \"base64\": "
           "the whole file's bytes, for binary files."}}}}},
      {"required", {"path"}},
      {"additionalProperties", false}};
  // The text (or base64) is the first content block only, never repeated
  // here: a reply carries a file once (docs/tools.md, "One copy").
  Json output = {
      {"type", "object"},
      {"description",
       "What was read; the lines (or base64) are the first text block of the result's "
       "content, not repeated here."},
      {"properties",
       {{"path", {{"type", "string"}}},
        {"kind", {{"type", "string"}, {"enum", {"text", "image", "base64"}}}},
        {"mime_type", {{"type", "string"}}},
        {"size", {{"type", "integer"}, {"description", "File size in bytes."}}},
        {"start_line", {{"type", "integer"}, {"description", "First line returned; 0 if none."}}},
        {"end_line", {{"type", "integer"}, {"description", "Last line returned; 0 if none."}}},
        {"total_lines", {{"type", "integer"}}},
        {"total_lines_exact",
         {{"type", "boolean"},
          {"description", "false: counting stopped at the time limit; total_lines is a minimum."}}},
        {"truncated",
         {{"type", "boolean"},
          {"description", "Fewer lines than asked for were returned because of the size limit."}}},
        {"line_cut",
         {{"type", "boolean"},
          {"description", "The only line returned is longer than the size limit and was cut."}}},
        {"bom", {{"type", "boolean"}, {"description", "A UTF-8 byte order mark was removed."}}},
        {"invalid_utf8",
         {{"type", "integer"},
          {"description", "Invalid UTF-8 sequences in content, each shown as U+FFFD."}}}}},
      {"required", {"path", "kind", "mime_type", "size"}}};
  return protocol::ToolDescriptor{
      .name = std::string(policy::names::kReadFile),
      .title = "Read file",
      .description =
          "Read a file from the sandbox. Text comes back by line range (offset/limit, "
          "1-based; default the first 2000 lines) with the total line count; a result cut by the "
          "size limit says where to continue. PNG, JPEG, GIF and WebP files come back as "
          "images. Other binary files are refused with their type and size unless encoding is "
          "\"base64\". Invalid UTF-8 is shown as U+FFFD. Use list_directory or find_files to find "
          "paths; paths the sandbox policy hides do not exist here." +
          std::string(kJailPrivateNote),
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations = read_only_annotations(),
  };
}

protocol::ToolResult format_read_file(const Json& /*args*/, files::OpReply reply) {
  Json& h = reply.header;
  const std::string kind = h.value("kind", std::string("text"));
  const std::string path = h.value("path", std::string());
  const std::int64_t size = h.value("size", std::int64_t{0});
  protocol::ToolResult r;
  Json structured = h;
  if (kind == "image") {
    const std::string mime = h.value("mime_type", std::string());
    r.content.emplace_back(
        Json{{"type", "image"}, {"data", files::base64_encode(reply.bytes)}, {"mimeType", mime}});
    r.add_text(fmt::format("{}: {} image, {}", path, mime, plural(size, "byte")));
    r.structured = std::move(structured);
    return r;
  }
  if (kind == "base64") {
    r.add_text(files::base64_encode(reply.bytes));
    r.add_text(fmt::format("{}: {}, {}, base64 above", path, h.value("mime_type", std::string()),
                           plural(size, "byte")));
    r.structured = std::move(structured);
    return r;
  }

  const std::int64_t start = h.value("start_line", std::int64_t{0});
  const std::int64_t end = h.value("end_line", std::int64_t{0});
  const std::int64_t total = h.value("total_lines", std::int64_t{0});
  const bool exact = h.value("total_lines_exact", true);
  const std::string total_text = exact ? std::to_string(total) : fmt::format("at least {}", total);
  std::vector<std::string> notes;
  if (total == 0) {
    notes.push_back(fmt::format("{} is empty.", path));
  } else if (h.value("line_cut", false)) {
    notes.push_back(fmt::format(
        "Line {} of {} is longer than the size limit; only its first {} are shown. Use exec "
        "(cut -c, fold, head -c) to see the rest.",
        start, total_text, plural(static_cast<std::int64_t>(reply.bytes.size()), "byte")));
  } else if (start != 1 || end != total || !exact) {
    notes.push_back(fmt::format("Lines {}-{} of {} in {}.", start, end, total_text, path));
  }
  if (h.value("truncated", false) && !h.value("line_cut", false)) {
    notes.push_back(
        fmt::format("The size limit stopped the result; continue with offset={}.", end + 1));
  }
  if (const auto invalid = h.value("invalid_utf8", std::int64_t{0}); invalid > 0) {
    notes.push_back(fmt::format(
        "{} shown as U+FFFD (the file is not valid UTF-8 there); pass encoding: \"base64\" for "
        "the exact bytes.",
        plural(invalid, "invalid UTF-8 sequence")));
  }
  r.add_text(std::move(reply.bytes));
  if (!notes.empty()) {
    std::string note;
    for (const std::string& n : notes) note += (note.empty() ? "" : " ") + n;
    r.add_text(std::move(note));
  }
  r.structured = std::move(structured);
  return r;
}

}  // namespace brig::tools
