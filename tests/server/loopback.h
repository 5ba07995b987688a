// Sockets on 127.0.0.1 for the tests and benchmarks that talk TCP or UDP
// (the egress relay, the LLM proxy): tests reach no other address.
// Header-only, so that a benchmark links nothing of the test support.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "jail/base/unique_fd.h"

namespace brig::testing::loopback {

inline sockaddr_in address(std::uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return sa;
}

// The local port a socket is bound to.
inline std::uint16_t port_of(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

// A socket of `type` (SOCK_STREAM or SOCK_DGRAM, with SOCK_NONBLOCK if
// wanted) bound to 127.0.0.1:port (0: an ephemeral port), listening with
// `backlog` if a stream; invalid if it could not be bound or listen.
inline UniqueFd bound(int type = SOCK_STREAM, std::uint16_t port = 0, int backlog = 1024) {
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  if (!fd) return fd;
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in sa = address(port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) return UniqueFd();
  if ((type & 0xf) == SOCK_STREAM && ::listen(fd.get(), backlog) != 0) return UniqueFd();
  return fd;
}

// Bounds every blocking send and receive on fd (0: no bound): a peer that
// stops answering ends a test with a failure instead of hanging it.
inline void set_timeouts(int fd, std::chrono::milliseconds t) {
  timeval tv{static_cast<time_t>(t.count() / 1000),
             static_cast<suseconds_t>(t.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// A socket of `type` connected to 127.0.0.1:port, its sends and receives
// bounded by `timeout` (0: unbounded); invalid (errno set) if the connect
// failed.
inline UniqueFd connect_to(std::uint16_t port,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10),
                           int type = SOCK_STREAM) {
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  if (!fd) return fd;
  set_timeouts(fd.get(), timeout);
  const sockaddr_in sa = address(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
    const int saved = errno;
    fd.reset();
    errno = saved;
  }
  return fd;
}

// Sends all of `bytes`; false (errno set) if the peer or a timeout stopped it.
inline bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// What arrives until the peer closes, an error or the socket's timeout; at
// most `limit` bytes (a little more: whole reads).
inline std::string read_all(int fd, std::size_t limit = std::numeric_limits<std::size_t>::max()) {
  std::string out;
  char buf[16384];
  while (out.size() < limit) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace brig::testing::loopback
