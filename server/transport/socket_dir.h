// Whether others could replace brig's socket file: a client connects by
// path, so whoever can rename or remove entries in the socket's directory
// (or in any directory above it) can put a socket of their own in its place
// and receive the next client's calls (and the keys a client may send).
// brig's SO_PEERCRED check protects brig from impostor clients, not clients
// from an impostor brig. docs/server.md, "Unix socket".
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace brig::transport {

// One sentence per directory on the socket's path (its real path, from the
// socket's directory up to /) that a user other than `owner` and root can
// change: writable by its group or by everyone without the sticky bit, or
// owned by another user. Empty when none can (or a directory cannot be
// inspected: bind() will say why). `socket_path` is absolute.
std::vector<std::string> socket_dir_risks(const std::string& socket_path, uid_t owner);

}  // namespace brig::transport
