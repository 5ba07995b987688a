#include "server/process/peer_credentials.h"

#include <sys/socket.h>

#include <cerrno>

#include <fmt/format.h>

namespace brig::process {

std::string PeerCredentials::to_string() const {
  return fmt::format("pid {} uid {} gid {}", pid, uid, gid);
}

Result<PeerCredentials> peer_credentials(int socket_fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return std::unexpected(
        sys_error("read peer credentials", fmt::format("fd {}", socket_fd), errno));
  }
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

}  // namespace brig::process
