// PeerCredentials: who is on the other end of a connection, as the kernel
// reports it (SO_PEERCRED), for access checks and tool audit records.
#pragma once

#include <sys/types.h>

#include <string>

#include "jail/base/error.h"

namespace brig::process {

// The process that connected: its pid, effective uid and gid at connect() time.
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;

  // "pid 123 uid 1000 gid 1000", for logs.
  std::string to_string() const;
};

// The credentials of the peer of a connected Unix socket; an error when fd is
// not a Unix socket or getsockopt(SO_PEERCRED) fails.
Result<PeerCredentials> peer_credentials(int socket_fd);

}  // namespace brig::process
