#include "server/files/edit_file.h"

#include <sys/stat.h>

#include <cerrno>

#include <fmt/format.h>

#include "server/files/atomic_write.h"
#include "server/files/content_type.h"
#include "server/files/file_io.h"
#include "server/files/line_diff.h"
#include "server/files/text_edit.h"
#include "server/files/tool_path.h"
#include "server/files/utf8.h"
#include "server/files/write_file.h"

namespace brig::files {
namespace {

using protocol::Json;
constexpr std::string_view kEditFileOp = "edit file";

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

Result<OpReply> edit_file_op(const Json& args, const OpContext& ctx) {
  const std::string path =
      BRIG_TRY(resolve_path(ctx.workspace, args.value("path", std::string()), kEditFileOp));
  const bool dry_run = args.value("dry_run", false);
  const std::vector<TextEdit> edits = edits_of(args);
  if (edits.empty()) {
    return std::unexpected(
        Error{std::string(kEditFileOp), path, "edits is empty; nothing to do", 0});
  }
  // The write would replace a symlink by a file; refuse before reading, so a
  // dry run says the same as the real edit.
  struct stat link {};
  if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    return std::unexpected(Error{std::string(kEditFileOp), path,
                                 "is a symlink; brig does not write through symlinks: edit the "
                                 "target's path instead",
                                 ELOOP});
  }
  OpenFile f = BRIG_TRY(open_regular(path, kEditFileOp));
  if (static_cast<std::size_t>(f.st.st_size) > kMaxEditBytes) {
    return std::unexpected(
        Error{std::string(kEditFileOp), path,
              fmt::format("the file has {} bytes, over the {}-byte limit for edit_file; use exec "
                          "(sed, a script) for files this large",
                          f.st.st_size, kMaxEditBytes),
              EFBIG});
  }
  const std::string before = BRIG_TRY(read_up_to(f.fd.get(), kMaxEditBytes + 1, kEditFileOp, path));
  if (before.size() > kMaxEditBytes) {
    return std::unexpected(Error{std::string(kEditFileOp), path,
                                 "the file grew past the edit_file limit while read", EFBIG});
  }
  if (const ContentType type = sniff_content(before); type.kind != ContentType::Kind::text) {
    return std::unexpected(Error{
        std::string(kEditFileOp), path,
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
    options.what = kEditFileOp;
    const std::string suffix = args.value(std::string(kTempSuffixArg), std::string());
    options.temp_suffix = suffix;
    BRIG_TRY(atomic_write(path, edited.bytes, options));
    written = true;
  }
  const bool diff_cut = cut_at_line(diff.text, ctx.max_bytes);
  Json header = {{"path", name_to_text(path)},
                 {"dry_run", dry_run},
                 {"changed", changed},
                 {"written", written},
                 {"replacements", edited.replacements},
                 {"lines_added", diff.stats.added},
                 {"lines_removed", diff.stats.removed},
                 {"line_endings", edited.crlf ? "crlf" : "lf"},
                 {"bom", edited.bom},
                 {"diff_truncated", diff_cut}};
  return OpReply{std::move(header), std::move(diff.text)};
}

}  // namespace brig::files
