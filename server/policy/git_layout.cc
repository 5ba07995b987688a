#include "server/policy/git_layout.h"

#include <sys/stat.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "server/policy/expand.h"

namespace brig::policy {
namespace {

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

std::optional<std::string> real(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return std::nullopt;
  return std::string(buf);
}

// `path` made absolute against `base` and resolved; nullopt if missing.
std::optional<std::string> resolve_from(const std::string& base, const std::string& path) {
  return real(path.starts_with('/') ? path : base + "/" + path);
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// core.hooksPath from a git config file, as written; empty if unset. Only
// the file itself is read (not [include]d files): a best-effort extra, since
// .git/config itself is what keeps a hooks path from being added.
std::string hooks_path_in(const std::string& config) {
  std::ifstream in(config);
  std::string line, section, value;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t[0] == '[') {
      section = lower(trim(std::string_view(t).substr(1, t.find(']') - 1)));
      continue;
    }
    const size_t eq = t.find('=');
    if (section == "core" && eq != std::string::npos &&
        lower(trim(t.substr(0, eq))) == "hookspath") {
      value = trim(t.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
    }
  }
  return value;
}

}  // namespace

GitLayout find_git_layout(const std::string& workspace) {
  GitLayout g;
  const std::string dot_git = workspace + "/.git";
  struct stat st {};
  if (::lstat(dot_git.c_str(), &st) != 0) return g;
  if (S_ISDIR(st.st_mode)) {
    g.kind = GitLayout::Kind::directory;
    g.dot_git = g.gitdir = g.commondir = dot_git;
  } else if (S_ISREG(st.st_mode)) {
    g.kind = GitLayout::Kind::file;
    g.dot_git = dot_git;
    const auto line = read_first_line(dot_git);
    if (!line || !line->starts_with("gitdir:")) return g;
    const auto gitdir = resolve_from(workspace, trim(std::string_view(*line).substr(7)));
    if (!gitdir) return g;
    // The back-pointer: a worktree's gitdir names the .git file that uses it.
    // Without it, a .git file written by an earlier jail could point brig at
    // any directory (~/.ssh) and have it bound writable into the next one.
    const auto back = read_first_line(*gitdir + "/gitdir");
    if (!back || resolve_from(*gitdir, *back) != real(dot_git)) return g;
    const auto common = read_first_line(*gitdir + "/commondir");
    const auto commondir = common ? resolve_from(*gitdir, *common) : gitdir;
    if (!commondir) return g;
    g.gitdir = *gitdir;
    g.commondir = *commondir;
  } else {
    return g;
  }
  if (std::string hooks = hooks_path_in(g.commondir + "/config"); !hooks.empty()) {
    // As git does: relative to the top of the working tree; "~/" is the home.
    if (hooks.starts_with("~/")) {
      if (const char* home = std::getenv("HOME")) hooks = home + hooks.substr(1);
    }
    if (auto n = normalize_path(hooks.starts_with('/') ? hooks : workspace + "/" + hooks))
      g.hooks_path = *n;
  }
  return g;
}

}  // namespace brig::policy
