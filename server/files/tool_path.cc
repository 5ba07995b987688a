#include "server/files/tool_path.h"

#include "jail/base/path.h"

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
  return *normalize(absolute_from(workspace, path), DotDot::keep);
}

}  // namespace brig::files
