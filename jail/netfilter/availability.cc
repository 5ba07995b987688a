#include "jail/netfilter/availability.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jail/base/unique_fd.h"

namespace brig::jail::netfilter {
namespace {

bool has_net_admin() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32))) != 0;
}

}  // namespace

std::optional<std::string> filtered_unavailable() {
  if (!has_net_admin())
    return "network mode filtered needs root or CAP_NET_ADMIN (it makes a veth and NAT rules "
           "in the host's network namespace), and brig has neither: run brig as root, or use "
           "network mode proxy, which needs no privilege";
  UniqueFd fd(::open("/proc/sys/net/ipv4/ip_forward", O_RDONLY | O_CLOEXEC));
  char c = '0';
  if (!fd || ::read(fd.get(), &c, 1) != 1 || c != '1')
    return "network mode filtered needs the host to forward IPv4, and net.ipv4.ip_forward is "
           "0 here: enable it (sysctl -w net.ipv4.ip_forward=1; brig never changes it itself), "
           "or use network mode proxy";
  return std::nullopt;
}

}  // namespace brig::jail::netfilter
