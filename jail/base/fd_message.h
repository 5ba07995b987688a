// One fixed-size message with descriptors riding along (SCM_RIGHTS) over a
// Unix socket, between the launcher's side and the jail's child. Nothing
// here allocates: the child calls it between clone3 and execve.
#pragma once

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <cstddef>

namespace brig {

// The most descriptors one message carries (the cgroups: two per hierarchy;
// the network helper: eight listeners and a filtered jail's namespace).
inline constexpr std::size_t kMaxMessageFds = 9;

// Sends the `size` bytes at `data` with `nfds` descriptors (at most
// kMaxMessageFds). Returns 0, errno, or EPIPE when the socket took less.
inline int send_with_fds(int sock, const void* data, std::size_t size, const int* fds,
                         std::size_t nfds) {
  if (nfds > kMaxMessageFds) return EINVAL;
  char control[CMSG_SPACE(kMaxMessageFds * sizeof(int))] = {};
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (nfds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    ::memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
  }
  ssize_t sent;
  while ((sent = ::sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (sent < 0) return errno;
  return static_cast<std::size_t>(sent) == size ? 0 : EPIPE;
}

// Receives exactly `size` bytes into `data` and the descriptors sent with
// them (CLOEXEC) into `fds`, which has room for kMaxMessageFds; *nfds says
// how many came. Returns 0, errno, EPIPE when the sender closed before the
// message (it is gone, or sent none on purpose), EPROTO when it closed
// partway through (a message cut short is never taken for "none sent"), or
// EMFILE for descriptors the kernel cut off (no free number under
// RLIMIT_NOFILE, or more than kMaxMessageFds sent), so that this is never
// taken for the sender's end.
inline int receive_with_fds(int sock, void* data, std::size_t size, int* fds, std::size_t* nfds) {
  *nfds = 0;
  char control[CMSG_SPACE(kMaxMessageFds * sizeof(int))] = {};
  iovec iov{data, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t got;
  while ((got = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL)) < 0 && errno == EINTR) {
  }
  if (got < 0) return errno;
  // Those that did come are the caller's to close, whatever else went wrong.
  if (const cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
    *nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    ::memcpy(fds, CMSG_DATA(c), *nfds * sizeof(int));
  }
  if (got == 0) return EPIPE;
  if (msg.msg_flags & MSG_CTRUNC) return EMFILE;
  // MSG_WAITALL still returns less after a piece that carried fds, or on a
  // signal; the rest carries none. (Every caller's socket is SOCK_STREAM:
  // on a packet socket this would read the next message.)
  std::size_t have = static_cast<std::size_t>(got);
  while (have < size) {
    const ssize_t n = ::recv(sock, static_cast<char*>(data) + have, size - have, MSG_WAITALL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EPROTO;
    have += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace brig
