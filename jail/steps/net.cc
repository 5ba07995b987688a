#include "jail/steps/net.h"

#include <errno.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace brig::jail::net {
namespace {

// make_in_helper's report, with the namespace's fd (SCM_RIGHTS) when err is 0.
struct Reply {
  int err = 0;
  bool in_loopback = false;
};

int loopback_up(int fd) {
  ifreq ifr{};
  ::memcpy(ifr.ifr_name, "lo", 3);
  if (::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) return errno;
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  return ::ioctl(fd, SIOCSIFFLAGS, &ifr) == 0 ? 0 : errno;
}

}  // namespace

void make_in_helper(int userns_fd, int sock) {
  // Like the jail's init: no process may ptrace it or open its fds.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  Reply reply;
  int ns = -1;
  if ((userns_fd >= 0 && ::setns(userns_fd, CLONE_NEWUSER) != 0) || ::unshare(CLONE_NEWNET) != 0) {
    reply.err = errno;
  } else if (const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); fd < 0) {
    reply = {errno, true};
  } else if (int e = loopback_up(fd)) {
    reply = {e, true};
  } else if ((ns = ::ioctl(fd, SIOCGSKNS, 0)) < 0) {
    reply.err = errno;
  }
  char control[CMSG_SPACE(sizeof ns)] = {};
  iovec iov{&reply, sizeof reply};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (reply.err == 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof ns);
    ::memcpy(CMSG_DATA(c), &ns, sizeof ns);
  }
  [[maybe_unused]] ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  ::_exit(0);
}

int join_in_child(int sock, bool* in_loopback) {
  Reply reply{EPIPE, false};
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{&reply, sizeof reply};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t got;
  while ((got = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL)) < 0 && errno == EINTR) {
  }
  *in_loopback = false;
  if (got < 0) return errno;
  if (got != sizeof reply) return EPIPE;  // EOF: the helper died first
  *in_loopback = reply.in_loopback;
  if (reply.err != 0) return reply.err;
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) return EPROTO;
  int ns;
  ::memcpy(&ns, CMSG_DATA(c), sizeof ns);
  const int err = ::setns(ns, CLONE_NEWNET) == 0 ? 0 : errno;
  ::close(ns);
  return err;
}

}  // namespace brig::jail::net
