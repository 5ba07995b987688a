#include "server/commands/workspace.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

namespace brig::commands {
namespace {

constexpr std::array<std::string_view, 34> kSystemDirectories = {
    "/bin",       "/boot",        "/dev",       "/etc",          "/home",        "/lib",
    "/lib32",     "/lib64",       "/libx32",    "/media",        "/mnt",         "/opt",
    "/proc",      "/root",        "/run",       "/sbin",         "/srv",         "/sys",
    "/tmp",       "/usr",         "/var",       "/usr/bin",      "/usr/include", "/usr/lib",
    "/usr/lib64", "/usr/libexec", "/usr/local", "/usr/sbin",     "/usr/share",   "/usr/src",
    "/var/lib",   "/var/log",     "/var/tmp",   "/usr/local/bin"};

constexpr std::array<std::string_view, 5> kSystemTrees = {"/proc/", "/sys/", "/dev/", "/boot/",
                                                          "/etc/"};

Result<std::string> canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) {
    return std::unexpected(sys_error("resolve the workspace", path, errno));
  }
  return std::string(buf);
}

// Why a canonical path makes a poor workspace; empty when it is fine.
std::optional<std::string> risk_of(const std::string& path, const std::string& home) {
  if (path == "/") return "it is the root of the filesystem";
  if (!home.empty() && path == home) return "it is the home directory itself";
  if (is_system_directory(path)) return "it is a system directory";
  return std::nullopt;
}

}  // namespace

bool is_system_directory(std::string_view path) {
  return std::find(kSystemDirectories.begin(), kSystemDirectories.end(), path) !=
             kSystemDirectories.end() ||
         std::any_of(kSystemTrees.begin(), kSystemTrees.end(),
                     [&](std::string_view tree) { return path.starts_with(tree); });
}

Result<Workspace> resolve_workspace(const std::optional<std::string>& requested,
                                    const std::string& cwd, const std::string& home) {
  const bool implicit = !requested || requested->empty();
  std::string wanted = implicit ? cwd : *requested;
  if (!wanted.starts_with('/')) wanted = cwd + "/" + wanted;
  Workspace ws{.path = BRIG_TRY(canonical(wanted)), .implicit = implicit, .warning = {}};

  struct stat st {};
  if (::stat(ws.path.c_str(), &st) != 0) {
    return std::unexpected(sys_error("inspect the workspace", ws.path, errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return std::unexpected(Error{"use the workspace", ws.path, "not a directory"});
  }

  std::string canonical_home;
  if (!home.empty()) canonical_home = canonical(home).value_or(home);
  const std::optional<std::string> risk = risk_of(ws.path, canonical_home);
  if (!risk) return ws;
  if (implicit) {
    return std::unexpected(
        Error{"choose the workspace", ws.path,
              fmt::format("no --workspace was given and the current directory is not a usable "
                          "workspace: {} (MCP clients often start servers in / or the home "
                          "directory). Pass --workspace /absolute/path/to/project",
                          *risk)});
  }
  if (ws.path == "/") {
    return std::unexpected(Error{"choose the workspace", ws.path,
                                 "the whole filesystem cannot be a workspace; name a project "
                                 "directory"});
  }
  ws.warning = fmt::format(
      "the workspace {} was chosen explicitly, but {}: tools may change "
      "anything in it that the policy allows",
      ws.path, *risk);
  return ws;
}

}  // namespace brig::commands
