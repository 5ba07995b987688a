// Path relations that security decisions depend on, in one place so that
// every layer agrees (a bind, a mask, a cwd, a policy rule). Paths are
// absolute and normalized (no ., .., // or trailing /); nothing here touches
// the filesystem.
#pragma once

#include <cstddef>
#include <string_view>

namespace brig {

// Whether `path` is `parent` or lies below it, by whole components
// ("/a/bc" is not within "/a/b"); everything is within "/".
constexpr bool is_within(std::string_view path, std::string_view parent) {
  if (parent == "/") return true;
  return path.starts_with(parent) && (path.size() == parent.size() || path[parent.size()] == '/');
}

// Whether `path` is absolute and normal: "/" or "/"-separated names, none
// empty, "." or "..", no trailing "/", no NUL byte. What a mount target, a
// workspace or a policy rule must be once expanded.
constexpr bool is_normal_absolute(std::string_view path) {
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string_view::npos) return false;
  if (path == "/") return true;
  if (path.back() == '/') return false;
  for (size_t start = 1; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace brig
