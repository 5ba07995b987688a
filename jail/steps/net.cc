#include "jail/steps/net.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "jail/base/fd_message.h"
#include "jail/step_error.h"

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
  send_with_fds(sock, &reply, sizeof reply, &ns, reply.err == 0 ? 1 : 0);
  ::_exit(0);
}

int join_in_child(int sock, bool* in_loopback) {
  Reply reply{EPIPE, false};
  int fds[kMaxMessageFds];
  size_t nfds = 0;
  *in_loopback = false;
  // EPIPE: EOF, the helper died first.
  if (int e = receive_with_fds(sock, &reply, sizeof reply, fds, &nfds)) return e;
  *in_loopback = reply.in_loopback;
  if (reply.err != 0) return reply.err;
  if (nfds != 1) return EPROTO;
  const int ns = fds[0];
  const int err = ::setns(ns, CLONE_NEWNET) == 0 ? 0 : errno;
  ::close(ns);
  return err;
}

Result<clone::Reaped> start_helper(pid_t child, bool in_userns, int sock) {
  UniqueFd userns;
  if (in_userns) {
    const std::string path = "/proc/" + std::to_string(child) + "/ns/user";
    userns.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!userns) return std::unexpected(step_sys_error(SetupStep::netns, "open " + path, errno));
  }
  int pidfd = -1;
  const pid_t pid = clone::clone3_with_pidfd(0, &pidfd);
  if (pid < 0) return std::unexpected(step_sys_error(SetupStep::netns, "clone3 the helper", errno));
  if (pid == 0) make_in_helper(userns ? userns.get() : -1, sock);
  return clone::Reaped(pid, pidfd);
}

}  // namespace brig::jail::net
