#include "jail/netfilter/veth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "jail/base/unique_fd.h"
#include "jail/netfilter/netlink_request.h"
#include "jail/netfilter/ruleset.h"

namespace brig::jail::netfilter {

Result<UniqueFd> open_rtnetlink() {
  UniqueFd sock(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!sock) return std::unexpected(sys_error("open", "an rtnetlink socket", errno));
  return sock;
}

std::string veth_name(std::uint32_t index) {
  return kVethPrefix + std::to_string(index);
}

Result<std::uint32_t> create_veth(int jail_netns, std::uint32_t start) {
  UniqueFd sock = BRIG_TRY(open_rtnetlink());
  for (std::uint32_t tried = 0; tried < kMaxVeths; ++tried) {
    const std::uint32_t index = (start + tried) % kMaxVeths;
    NetlinkRequest r(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    r.header(ifinfomsg{});
    r.attr_str(IFLA_IFNAME, veth_name(index));
    const std::size_t info = r.begin_nest(IFLA_LINKINFO);
    r.attr_str(IFLA_INFO_KIND, "veth");
    const std::size_t data = r.begin_nest(IFLA_INFO_DATA);
    const std::size_t peer = r.begin_nest(VETH_INFO_PEER);
    ifinfomsg jail_end{};
    jail_end.ifi_index = static_cast<int>(kJailIfindex);
    r.header(jail_end);
    r.attr_str(IFLA_IFNAME, "eth0");
    r.attr_value<std::uint32_t>(IFLA_NET_NS_FD, static_cast<std::uint32_t>(jail_netns));
    r.end_nest(peer);
    r.end_nest(data);
    r.end_nest(info);
    const int e = r.send(sock.get());
    if (e == 0) return index;
    if (e != EEXIST)
      return std::unexpected(sys_error("create the jail's veth", veth_name(index), e));
  }
  return std::unexpected(Error{"create the jail's veth", kVethPrefix,
                               "all " + std::to_string(kMaxVeths) + " names are taken", EEXIST});
}

Result<void> address_and_up(int sock, unsigned index, const std::string& ifname,
                            std::uint32_t address, int prefix) {
  NetlinkRequest a(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_INET;
  ifa.ifa_prefixlen = static_cast<unsigned char>(prefix);
  ifa.ifa_index = index;
  a.header(ifa);
  const std::uint32_t be = htonl(address);
  a.attr(IFA_LOCAL, &be, sizeof be);
  a.attr(IFA_ADDRESS, &be, sizeof be);
  if (int e = a.send(sock))
    return std::unexpected(sys_error("give the address " + ipv4_text(address), ifname, e));
  NetlinkRequest up(RTM_NEWLINK, 0);
  ifinfomsg ifi{};
  ifi.ifi_index = static_cast<int>(index);
  ifi.ifi_flags = IFF_UP;
  ifi.ifi_change = IFF_UP;
  up.header(ifi);
  if (int e = up.send(sock)) return std::unexpected(sys_error("bring up", ifname, e));
  return {};
}

Result<void> default_route(int sock, std::uint32_t gateway) {
  NetlinkRequest r(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
  rtmsg rt{};
  rt.rtm_family = AF_INET;
  rt.rtm_table = RT_TABLE_MAIN;
  rt.rtm_protocol = RTPROT_BOOT;
  rt.rtm_scope = RT_SCOPE_UNIVERSE;
  rt.rtm_type = RTN_UNICAST;
  r.header(rt);
  const std::uint32_t be = htonl(gateway);
  r.attr(RTA_GATEWAY, &be, sizeof be);
  if (int e = r.send(sock))
    return std::unexpected(sys_error("route the jail's traffic", "via " + ipv4_text(gateway), e));
  return {};
}

}  // namespace brig::jail::netfilter
