#include "server/files/tool_path.h"

#include "jail/base/path.h"
#include "server/files/utf8.h"

namespace brig::files {

Result<std::string> resolve_path(std::string_view workspace, std::string_view path,
                                 std::string_view what) {
  if (path.empty()) {
    return std::unexpected(Error{std::string(what), "",
                                 "the path is empty; name a file, absolute "
                                 "or relative to the workspace"});
  }
  if (path.find('\0') != std::string_view::npos) {
    return std::unexpected(Error{std::string(what), "", "the path contains a NUL byte"});
  }
  const std::optional<std::string> name = text_to_name(path);
  if (!name) {
    return std::unexpected(
        Error{std::string(what), std::string(path),
              "spells as escapes (U+F780..U+F7FF) bytes that form a valid UTF-8 character; write "
              "that character itself (the escapes stand only for bytes that are not UTF-8, and for "
              "the characters U+F780..U+F7FF)"});
  }
  return *normalize(absolute_from(workspace, *name), DotDot::keep);
}

}  // namespace brig::files
