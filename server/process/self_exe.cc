#include "server/process/self_exe.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace brig::process {

Result<std::string> self_exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n < 0)
    return std::unexpected(sys_error("find the running executable", "/proc/self/exe", errno));
  std::string path(buf, static_cast<std::size_t>(n));
  const auto slash = path.rfind('/');
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

Result<std::string> find_sibling(std::initializer_list<std::string_view> candidates) {
  const std::string dir = BRIG_TRY(self_exe_dir());
  std::string tried;
  for (std::string_view c : candidates) {
    const std::string path = dir + "/" + std::string(c);
    char resolved[PATH_MAX];
    if (::access(path.c_str(), X_OK) == 0 && ::realpath(path.c_str(), resolved) != nullptr) {
      return std::string(resolved);
    }
    if (!tried.empty()) tried += ", ";
    tried += path;
  }
  return std::unexpected(
      Error{"find a sibling executable", tried, "none exists and is executable"});
}

}  // namespace brig::process
