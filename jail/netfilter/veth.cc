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

#include <cstring>
#include <string>
#include <vector>

#include "jail/base/unique_fd.h"
#include "jail/netfilter/ruleset.h"

namespace brig::jail::netfilter {
namespace {

// One rtnetlink request, built attribute by attribute; nests are closed
// by patching their length.
class Request {
 public:
  Request(std::uint16_t type, std::uint16_t flags) {
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = static_cast<std::uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
    h.nlmsg_seq = 1;
    append(&h, sizeof h);
  }
  template <class T>
  void header(const T& t) {
    append(&t, sizeof t);
  }
  void attr(std::uint16_t type, const void* data, std::size_t size) {
    rtattr a{};
    a.rta_type = type;
    a.rta_len = static_cast<unsigned short>(RTA_LENGTH(size));
    append(&a, sizeof a);
    append(data, size);
  }
  void attr_str(std::uint16_t type, const std::string& s) { attr(type, s.c_str(), s.size() + 1); }
  template <class T>
  void attr_value(std::uint16_t type, T v) {
    attr(type, &v, sizeof v);
  }
  std::size_t begin_nest(std::uint16_t type) {
    const std::size_t at = buf_.size();
    attr(type, nullptr, 0);
    return at;
  }
  void end_nest(std::size_t at) {
    const auto len = static_cast<unsigned short>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof len);
  }
  // Sends it and reads the kernel's ack: 0 or errno.
  int send(int sock) {
    const auto len = static_cast<std::uint32_t>(buf_.size());
    std::memcpy(buf_.data(), &len, sizeof len);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(sock, buf_.data(), buf_.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                 sizeof kernel) < 0)
      return errno;
    alignas(nlmsghdr) char reply[4096];
    const ssize_t n = ::recv(sock, reply, sizeof reply, 0);
    if (n < 0) return errno;
    const auto* h = reinterpret_cast<const nlmsghdr*>(reply);
    if (static_cast<std::size_t>(n) < sizeof(nlmsghdr) + sizeof(nlmsgerr) ||
        h->nlmsg_type != NLMSG_ERROR)
      return EPROTO;
    return -reinterpret_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
  }

 private:
  void append(const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    buf_.insert(buf_.end(), p, p + size);
    buf_.resize(NLMSG_ALIGN(buf_.size()));
  }
  std::vector<char> buf_;
};

Result<UniqueFd> open_rtnetlink() {
  UniqueFd sock(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!sock) return std::unexpected(sys_error("open", "an rtnetlink socket", errno));
  return sock;
}

std::string veth_name(std::uint32_t index) {
  return kVethPrefix + std::to_string(index);
}

}  // namespace

Result<std::uint32_t> create_veth(int jail_netns, std::uint32_t start) {
  UniqueFd sock = BRIG_TRY(open_rtnetlink());
  for (std::uint32_t tried = 0; tried < kMaxVeths; ++tried) {
    const std::uint32_t index = (start + tried) % kMaxVeths;
    Request r(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    r.header(ifinfomsg{});
    r.attr_str(IFLA_IFNAME, veth_name(index));
    const std::size_t info = r.begin_nest(IFLA_LINKINFO);
    r.attr_str(IFLA_INFO_KIND, "veth");
    const std::size_t data = r.begin_nest(IFLA_INFO_DATA);
    const std::size_t peer = r.begin_nest(VETH_INFO_PEER);
    r.header(ifinfomsg{});
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

Result<void> address_and_up(const std::string& ifname, std::uint32_t address, int prefix) {
  const unsigned index = ::if_nametoindex(ifname.c_str());
  if (index == 0) return std::unexpected(sys_error("find the interface", ifname, errno));
  UniqueFd sock = BRIG_TRY(open_rtnetlink());
  Request a(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_INET;
  ifa.ifa_prefixlen = static_cast<unsigned char>(prefix);
  ifa.ifa_index = index;
  a.header(ifa);
  const std::uint32_t be = htonl(address);
  a.attr(IFA_LOCAL, &be, sizeof be);
  a.attr(IFA_ADDRESS, &be, sizeof be);
  if (int e = a.send(sock.get()))
    return std::unexpected(sys_error("give the address " + ipv4_text(address), ifname, e));
  Request up(RTM_NEWLINK, 0);
  ifinfomsg ifi{};
  ifi.ifi_index = static_cast<int>(index);
  ifi.ifi_flags = IFF_UP;
  ifi.ifi_change = IFF_UP;
  up.header(ifi);
  if (int e = up.send(sock.get())) return std::unexpected(sys_error("bring up", ifname, e));
  return {};
}

Result<void> default_route(std::uint32_t gateway) {
  UniqueFd sock = BRIG_TRY(open_rtnetlink());
  Request r(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
  rtmsg rt{};
  rt.rtm_family = AF_INET;
  rt.rtm_table = RT_TABLE_MAIN;
  rt.rtm_protocol = RTPROT_BOOT;
  rt.rtm_scope = RT_SCOPE_UNIVERSE;
  rt.rtm_type = RTN_UNICAST;
  r.header(rt);
  const std::uint32_t be = htonl(gateway);
  r.attr(RTA_GATEWAY, &be, sizeof be);
  if (int e = r.send(sock.get()))
    return std::unexpected(sys_error("route the jail's traffic", "via " + ipv4_text(gateway), e));
  return {};
}

}  // namespace brig::jail::netfilter
