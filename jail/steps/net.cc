#include "jail/steps/net.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "jail/base/fd_message.h"
#include "jail/netfilter/jail_rules.h"
#include "jail/step_error.h"

namespace brig::jail::net {
namespace {

// make_in_helper's report to the child, with the namespace's fd
// (SCM_RIGHTS) when err is 0.
struct Reply {
  int err = 0;
  SetupStep step = SetupStep::netns;
};

// Its report to the launcher, with the listeners (SCM_RIGHTS) when err is 0;
// else `step` says what failed: the rules (netfilter), or (listen) the
// listener `index`.
struct ListenReply {
  int err = 0;
  std::uint32_t index = 0;
  SetupStep step = SetupStep::listen;
};

int loopback_up(int fd) {
  ifreq ifr{};
  ::memcpy(ifr.ifr_name, "lo", 3);
  if (::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) return errno;
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  return ::ioctl(fd, SIOCSIFFLAGS, &ifr) == 0 ? 0 : errno;
}

// Only 127.0.0.1: a listener is for the jail's own connections, and its
// loopback is the one interface it has.
int make_listener(const Listener& l, int* out) {
  const bool tcp = l.protocol == Listener::Protocol::tcp;
  const int fd =
      ::socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(l.port);
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0 ||
      (tcp && ::listen(fd, SOMAXCONN) != 0)) {
    const int e = errno;
    ::close(fd);
    return e;
  }
  *out = fd;
  return 0;
}

// Loads the rules, makes every listener and sends them, and with
// send_netns the namespace `ns` and an rtnetlink socket after them, to the
// launcher. 0, or the errno of what failed and *step (netfilter or listen).
int send_to_launcher(const HelperPlan& plan, int ns, SetupStep* step) {
  int fds[kMaxMessageFds];
  ListenReply reply;
  if (plan.listener_count + 2 > kMaxMessageFds) return E2BIG;
  if (plan.rules_size > 0 && (reply.err = netfilter::load_batch(plan.rules, plan.rules_size)))
    reply.step = SetupStep::netfilter;
  for (; reply.index < plan.listener_count && reply.err == 0; ++reply.index)
    reply.err = make_listener(plan.listeners[reply.index], &fds[reply.index]);
  if (reply.err != 0 && reply.step == SetupStep::listen) --reply.index;
  std::size_t made = reply.err == 0 ? plan.listener_count : reply.index;
  if (reply.err == 0 && plan.send_netns) {
    fds[made] = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fds[made] < 0) {
      reply.err = errno;
      reply.step = SetupStep::netns;
    } else {
      ++made;
    }
  }
  std::size_t count = made;
  if (reply.err == 0 && plan.send_netns) fds[count++] = ns;
  const int sent =
      send_with_fds(plan.listen_sock, &reply, sizeof reply, fds, reply.err == 0 ? count : 0);
  for (std::size_t i = 0; i < made; ++i) ::close(fds[i]);
  *step = reply.step;
  return reply.err != 0 ? reply.err : sent;
}

}  // namespace

void make_in_helper(const HelperPlan& plan) {
  // Like the jail's init: no process may ptrace it or open its fds.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  Reply reply;
  int ns = -1;
  if ((plan.userns_fd >= 0 && ::setns(plan.userns_fd, CLONE_NEWUSER) != 0) ||
      ::unshare(CLONE_NEWNET) != 0) {
    reply.err = errno;
  } else if (const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); fd < 0) {
    reply = {errno, SetupStep::loopback};
  } else if (int e = loopback_up(fd)) {
    reply = {e, SetupStep::loopback};
  } else if ((ns = ::ioctl(fd, SIOCGSKNS, 0)) < 0) {
    reply.err = errno;
  } else if (plan.listener_count > 0 || plan.send_netns) {
    SetupStep step = SetupStep::listen;
    if (int e = send_to_launcher(plan, ns, &step)) reply = {e, step};
  }
  send_with_fds(plan.child_sock, &reply, sizeof reply, &ns, reply.err == 0 ? 1 : 0);
  ::_exit(0);
}

int make_in_child(SetupStep* step, int* socket) {
  *step = SetupStep::netns;
  if (::unshare(CLONE_NEWNET) != 0) return errno;
  *step = SetupStep::loopback;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  if (const int e = loopback_up(fd)) {
    ::close(fd);
    return e;
  }
  *socket = fd;
  return 0;
}

void send_hold_in_child(int sync, int socket, int mounts) {
  const char hold = 'h';
  int fds[2] = {socket, mounts};
  (void)send_with_fds(sync, &hold, 1, fds, mounts >= 0 ? 2 : 1);
  ::close(socket);
  if (mounts >= 0) ::close(mounts);
}

NamespaceHold take_hold(int sync) {
  pollfd p{sync, POLLIN, 0};
  if (::poll(&p, 1, 0) != 1 || !(p.revents & POLLIN)) return {};
  char hold = 0;
  int fds[kMaxMessageFds];
  size_t nfds = 0;
  const int err = receive_with_fds(sync, &hold, 1, fds, &nfds);
  // Whatever came is closed unless it is what send_hold_in_child sends,
  // whole (an error still leaves the caller the fds that came).
  NamespaceHold held;
  held.network.reset(nfds > 0 ? fds[0] : -1);
  held.mounts.reset(nfds > 1 ? fds[1] : -1);
  for (size_t i = 2; i < nfds; ++i) ::close(fds[i]);
  if (err != 0 || hold != 'h') held = {};
  return held;
}

int join_in_child(int sock, SetupStep* step) {
  Reply reply{EPIPE, SetupStep::netns};
  int fds[kMaxMessageFds];
  size_t nfds = 0;
  *step = SetupStep::netns;
  // EPIPE: EOF, the helper died first.
  if (int e = receive_with_fds(sock, &reply, sizeof reply, fds, &nfds)) return e;
  *step = reply.step;
  if (reply.err != 0) return reply.err;
  if (nfds != 1) return EPROTO;
  const int ns = fds[0];
  const int err = ::setns(ns, CLONE_NEWNET) == 0 ? 0 : errno;
  ::close(ns);
  return err;
}

Result<clone::Reaped> start_helper(pid_t child, bool in_userns, int sock,
                                   std::span<const Listener> listeners, int listen_sock,
                                   bool send_netns, std::span<const char> rules) {
  UniqueFd userns;
  if (in_userns) {
    const std::string path = "/proc/" + std::to_string(child) + "/ns/user";
    userns.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!userns) return std::unexpected(step_sys_error(SetupStep::netns, "open " + path, errno));
  }
  const HelperPlan plan{.userns_fd = userns ? userns.get() : -1,
                        .child_sock = sock,
                        .listeners = listeners.data(),
                        .listener_count = listeners.size(),
                        .listen_sock = listen_sock,
                        .send_netns = send_netns,
                        .rules = rules.data(),
                        .rules_size = rules.size()};
  int pidfd = -1;
  const pid_t pid = clone::clone3_with_pidfd(0, &pidfd);
  if (pid < 0) return std::unexpected(step_sys_error(SetupStep::netns, "clone3 the helper", errno));
  if (pid == 0) make_in_helper(plan);
  return clone::Reaped(pid, pidfd);
}

Result<HelperFds> receive_from_helper(int listen_sock, std::span<const Listener> listeners,
                                      bool with_netns) {
  ListenReply reply{EPIPE, 0};
  int fds[kMaxMessageFds];
  size_t nfds = 0;
  const int e = receive_with_fds(listen_sock, &reply, sizeof reply, fds, &nfds);
  HelperFds out;
  for (size_t i = 0; i < nfds; ++i) out.listeners.emplace_back(fds[i]);
  if (e != 0 || reply.err != 0) {
    const int err = e != 0 ? e : reply.err;
    if (e == 0 && reply.step == SetupStep::netfilter)
      return std::unexpected(
          step_sys_error(SetupStep::netfilter, "load the jail's nftables table inet brig", err));
    std::string what = "the network helper's listeners";
    if (e == 0 && reply.step == SetupStep::listen && reply.index < listeners.size()) {
      const Listener& l = listeners[reply.index];
      what = "listen on 127.0.0.1:" + std::to_string(l.port) +
             (l.protocol == Listener::Protocol::tcp ? "/tcp" : "/udp") + " in the jail";
    }
    return std::unexpected(step_sys_error(SetupStep::listen, what, err));
  }
  if (out.listeners.size() != listeners.size() + (with_netns ? 2 : 0))
    return std::unexpected(
        step_sys_error(SetupStep::listen, "the network helper's listeners", EPROTO));
  if (with_netns) {
    out.netns = std::move(out.listeners.back());
    out.listeners.pop_back();
    out.route = std::move(out.listeners.back());
    out.listeners.pop_back();
  }
  return out;
}

}  // namespace brig::jail::net
