#include "server/files/edit_file.h"

#include <sys/stat.h>

#include <cerrno>

#include <fmt/format.h>

#include "server/files/atomic_write.h"
#include "server/files/content_type.h"
#include "server/files/file_io.h"
#include "server/files/line_diff.h"
#include "server/files/tool_path.h"
#include "server/files/text_edit.h"

namespace brig::files {
namespace {

using protocol::Json;
constexpr std::string_view kWhat = "edit file";

std::vector<TextEdit> edits_of(const Json& args) {
  std::vector<TextEdit> edits;
  const Json list = args.value("edits", Json::array());
  for (const Json& e : list) {
    if (!e.is_object()) continue;
    edits.push_back(TextEdit{e.value("old_text", std::string()), e.value("new_text", std::string()),
                             e.value("replace_all", false)});
  }
  return edits;
}

// The diff cut after its last whole line that fits in max_bytes.
bool cut_at_line(std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return false;
  const std::size_t nl = text.rfind('\n', max_bytes == 0 ? 0 : max_bytes - 1);
  text.resize(nl == std::string::npos ? 0 : nl + 1);
  return true;
}

}  // namespace

Result<worker::OpReply> edit_file_op(const Json& args, const worker::OpContext& ctx) {
  const std::string path =
      BRIG_TRY(resolve_path(ctx.workspace, args.value("path", std::string()), kWhat));
  const bool dry_run = args.value("dry_run", false);
  const std::vector<TextEdit> edits = edits_of(args);
  if (edits.empty()) {
    return std::unexpected(Error{std::string(kWhat), path, "edits is empty; nothing to do", 0});
  }
  // The write would replace a symlink by a file; refuse before reading, so a
  // dry run says the same as the real edit.
  struct stat link {};
  if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    return std::unexpected(Error{std::string(kWhat), path,
                                 "is a symlink; brig does not write through symlinks: edit the "
                                 "target's path instead",
                                 ELOOP});
  }
  OpenFile f = BRIG_TRY(open_regular(path, kWhat));
  if (static_cast<std::size_t>(f.st.st_size) > kMaxEditBytes) {
    return std::unexpected(
        Error{std::string(kWhat), path,
              fmt::format("the file has {} bytes, over the {}-byte limit for edit_file; use exec "
                          "(sed, a script) for files this large",
                          f.st.st_size, kMaxEditBytes),
              EFBIG});
  }
  const std::string before = BRIG_TRY(read_up_to(f.fd.get(), kMaxEditBytes + 1, kWhat, path));
  if (before.size() > kMaxEditBytes) {
    return std::unexpected(Error{std::string(kWhat), path,
                                 "the file grew past the edit_file limit while read", EFBIG});
  }
  if (const ContentType type = sniff_content(before); type.kind != ContentType::Kind::text) {
    return std::unexpected(Error{
        std::string(kWhat), path,
        fmt::format("is a binary file ({}); edit_file changes text files only", type.description),
        0});
  }
  const EditedText edited = BRIG_TRY(apply_edits(before, edits, path));
  Diff diff = unified_diff(edited.old_text, edited.new_text, path, path);
  const bool changed = edited.bytes != before;
  bool written = false;
  if (changed && !dry_run) {
    WriteOptions options;
    options.expect = FileStamp::of(f.st);
    options.what = kWhat;
    BRIG_TRY(atomic_write(path, edited.bytes, options));
    written = true;
  }
  const bool diff_cut = cut_at_line(diff.text, ctx.max_bytes);
  Json header = {{"path", path},
                 {"dry_run", dry_run},
                 {"changed", changed},
                 {"written", written},
                 {"replacements", edited.replacements},
                 {"lines_added", diff.stats.added},
                 {"lines_removed", diff.stats.removed},
                 {"line_endings", edited.crlf ? "crlf" : "lf"},
                 {"bom", edited.bom},
                 {"diff_truncated", diff_cut}};
  return worker::OpReply{std::move(header), std::move(diff.text)};
}

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
          {"description", "File to edit: absolute, or relative to the workspace."}}},
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
        {"diff", {{"type", "string"}, {"description", "Unified diff, 3 lines of context."}}},
        {"diff_truncated", {{"type", "boolean"}}}}},
      {"required", {"path", "dry_run", "changed", "written", "replacements", "diff"}}};
  return protocol::ToolDescriptor{
      .name = "edit_file",
      .title = "Edit file",
      .description =
          "Change part of a text file by exact-text replacement and get a unified diff back. "
          "Each edit's old_text must occur exactly once (add surrounding lines to make it "
          "unique) unless replace_all is set; edits apply in order, and if any fails nothing is "
          "written and the error names the edit and how many matches it found. Line endings "
          "(CRLF files may be edited with \\n), a UTF-8 BOM and the file mode are kept; the "
          "write is atomic. dry_run shows the diff without writing. Read the file first so "
          "old_text matches exactly.",
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations = protocol::tool_annotations(/*read_only=*/false, /*destructive=*/true,
                                                /*idempotent=*/false,
                                                /*open_world=*/false),
  };
}

protocol::ToolResult format_edit_file(const Json& /*args*/, worker::OpReply reply) {
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
  Json structured = h;
  structured["diff"] = reply.bytes;
  if (!reply.bytes.empty()) r.add_text(std::move(reply.bytes));
  r.add_text(std::move(summary));
  r.structured = std::move(structured);
  return r;
}

}  // namespace brig::files
