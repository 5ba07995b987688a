#include "jail/netfilter/netlink_request.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

namespace brig::jail::netfilter {

NetlinkRequest::NetlinkRequest(std::uint16_t type, std::uint16_t flags) {
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_flags = static_cast<std::uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
  h.nlmsg_seq = 1;
  append(&h, sizeof h);
}

void NetlinkRequest::attr(std::uint16_t type, const void* data, std::size_t size) {
  rtattr a{};
  a.rta_type = type;
  a.rta_len = static_cast<unsigned short>(RTA_LENGTH(size));
  append(&a, sizeof a);
  if (size > 0) append(data, size);
}

std::size_t NetlinkRequest::begin_nest(std::uint16_t type) {
  const std::size_t at = buf_.size();
  attr(type, nullptr, 0);
  return at;
}

void NetlinkRequest::end_nest(std::size_t at) {
  const auto len = static_cast<unsigned short>(buf_.size() - at);
  std::memcpy(buf_.data() + at, &len, sizeof len);
}

int NetlinkRequest::send_only(int sock) {
  const auto len = static_cast<std::uint32_t>(buf_.size());
  std::memcpy(buf_.data(), &len, sizeof len);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(sock, buf_.data(), buf_.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0)
    return errno;
  return 0;
}

int NetlinkRequest::send(int sock, std::uint16_t* reply_type) {
  if (const int e = send_only(sock)) return e;
  alignas(nlmsghdr) char reply[8192];
  const ssize_t n = ::recv(sock, reply, sizeof reply, 0);
  if (n < 0) return errno;
  if (static_cast<std::size_t>(n) < sizeof(nlmsghdr)) return EPROTO;
  const auto* h = reinterpret_cast<const nlmsghdr*>(reply);
  if (reply_type) *reply_type = h->nlmsg_type;
  if (h->nlmsg_type != NLMSG_ERROR) return 0;
  if (static_cast<std::size_t>(n) < sizeof(nlmsghdr) + sizeof(nlmsgerr)) return EPROTO;
  return -reinterpret_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
}

void NetlinkRequest::append(const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  buf_.insert(buf_.end(), p, p + size);
  buf_.resize(NLMSG_ALIGN(buf_.size()));
}

}  // namespace brig::jail::netfilter
