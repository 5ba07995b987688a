// The path rules that security decisions depend on, in one place so that
// every layer agrees (a bind, a mask, a cwd, a policy rule, a file tool's
// argument). Purely lexical: nothing here touches the filesystem.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brig {

// Whether `path` is `parent` or lies below it, by whole components
// ("/a/bc" is not within "/a/b"); everything is within "/". Both normalized.
// An empty parent holds nothing: a missing setting must not match every path.
constexpr bool is_within(std::string_view path, std::string_view parent) {
  if (parent.empty()) return false;
  if (parent == "/") return true;
  if (!path.starts_with(parent)) return false;
  // The rest as a view, not path[parent.size()]: inlined with literals, GCC
  // 12 -O2 flags that index out of bounds on the branch starts_with rules out.
  const std::string_view rest = path.substr(parent.size());
  return rest.empty() || rest.front() == '/';
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

// What normalize() does with a ".." component. Each caller picks the one its
// decision can afford:
enum class DotDot {
  // Left in place: a file tool's path, which the kernel resolves inside the
  // jail (a lexical ".." is wrong across a symlink).
  keep,
  // Drops the name before it ("/.." is "/"): a cwd or a denial's message,
  // where the text is all there is to go on.
  resolve,
  // The path is refused: a policy rule must mean the same thing whatever
  // the tree holds.
  refuse,
};

// `path` (absolute) with empty and "." components dropped and no trailing
// "/"; ".." as `dotdot` says. nullopt only for DotDot::refuse meeting "..".
// Without DotDot::keep, the result is_normal_absolute() when `path` has no
// NUL byte.
inline std::optional<std::string> normalize(std::string_view path, DotDot dotdot) {
  std::vector<std::string_view> parts;
  for (size_t start = 0; start < path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == ".." && dotdot == DotDot::refuse) return std::nullopt;
    if (part == ".." && dotdot == DotDot::resolve) {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (std::string_view p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

// `path` when absolute, else `base` + "/" + `path` (not normalized).
inline std::string absolute_from(std::string_view base, std::string_view path) {
  if (path.starts_with('/')) return std::string(path);
  std::string out(base);
  out += '/';
  out += path;
  return out;
}

// The directory part of an absolute path ("/a/b" -> "/a", "/a" -> "/").
inline std::string parent_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

// The last component of an absolute path ("/a/b" -> "b"; "/" -> "").
inline std::string name_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace brig
