// Path relations that security decisions depend on, in one place so that
// every layer agrees (a bind, a mask, a cwd, a policy rule). Paths are
// absolute and normalized (no ., .., // or trailing /); nothing here touches
// the filesystem.
#pragma once

#include <string_view>

namespace brig {

// Whether `path` is `parent` or lies below it, by whole components
// ("/a/bc" is not within "/a/b"); everything is within "/".
constexpr bool is_within(std::string_view path, std::string_view parent) {
  if (parent == "/") return true;
  return path.starts_with(parent) && (path.size() == parent.size() || path[parent.size()] == '/');
}

}  // namespace brig
