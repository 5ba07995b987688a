#include "server/transport/socket_dir.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fmt/format.h>

namespace brig::transport {

std::vector<std::string> socket_dir_risks(const std::string& socket_path, uid_t owner) {
  std::vector<std::string> risks;
  const std::size_t slash = socket_path.rfind('/');
  if (slash == std::string::npos) return risks;
  // The real path: a symlinked directory is only as safe as its target.
  char real[PATH_MAX];
  const std::string dir = slash == 0 ? "/" : socket_path.substr(0, slash);
  if (::realpath(dir.c_str(), real) == nullptr) return risks;
  std::string at = real;
  for (;;) {
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) return risks;
    const bool sticky = (st.st_mode & S_ISVTX) != 0;
    const unsigned mode = st.st_mode & 07777;
    std::string who;
    if (st.st_uid != owner && st.st_uid != 0) {
      who = fmt::format("it belongs to uid {}", st.st_uid);
    } else if ((mode & S_IWOTH) != 0 && !sticky) {
      who = fmt::format("everyone may write it (mode {:04o}, no sticky bit)", mode);
    } else if ((mode & S_IWGRP) != 0 && !sticky) {
      who = fmt::format("group {} may write it (mode {:04o}, no sticky bit)", st.st_gid, mode);
    }
    if (!who.empty()) {
      risks.push_back(fmt::format(
          "the directory {} on the socket's path can be changed by others: {}; they could "
          "replace the socket with their own and receive clients' calls. Use a directory only "
          "you can write (like $XDG_RUNTIME_DIR)",
          at, who));
    }
    if (at == "/") return risks;
    const std::size_t up = at.rfind('/');
    at = up == 0 ? "/" : at.substr(0, up);
  }
}

}  // namespace brig::transport
