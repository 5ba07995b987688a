#include "server/files/path.h"

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
  const std::string joined =
      path[0] == '/' ? std::string(path) : std::string(workspace) + "/" + std::string(path);
  std::string out;
  std::size_t start = 0;
  while (start < joined.size()) {
    std::size_t end = joined.find('/', start);
    if (end == std::string::npos) end = joined.size();
    const std::string_view part = std::string_view(joined).substr(start, end - start);
    if (!part.empty() && part != ".") {
      out += '/';
      out += part;
    }
    start = end + 1;
  }
  if (out.empty()) out = "/";
  return out;
}

std::string parent_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string name_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace brig::files
