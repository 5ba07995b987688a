#include "jail/netfilter/nft_table.h"

#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include "jail/base/unique_fd.h"
#include "jail/netfilter/netlink_request.h"

namespace brig::jail::netfilter {
namespace {

constexpr std::uint16_t nft_type(int msg) {
  return static_cast<std::uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | msg);
}

}  // namespace

Result<std::optional<int>> inet_table_rules(const std::string& name) {
  UniqueFd sock(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
  if (!sock) return std::unexpected(sys_error("open", "an nfnetlink socket", errno));
  nfgenmsg g{};
  g.nfgen_family = NFPROTO_INET;
  g.version = NFNETLINK_V0;
  NetlinkRequest table(nft_type(NFT_MSG_GETTABLE), 0);
  table.header(g);
  table.attr_str(NFTA_TABLE_NAME, name);
  std::uint16_t type = 0;
  if (const int e = table.send(sock.get(), &type); e == ENOENT) {
    return std::nullopt;
  } else if (e != 0) {
    return std::unexpected(sys_error("look for the nftables table", name, e));
  }
  if (type != nft_type(NFT_MSG_NEWTABLE)) return std::nullopt;
  // Its rules: a dump, counted until NLMSG_DONE, on a socket of its own (the
  // first may still hold the table's ack).
  UniqueFd dump(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
  if (!dump) return std::unexpected(sys_error("open", "an nfnetlink socket", errno));
  NetlinkRequest rules(nft_type(NFT_MSG_GETRULE), NLM_F_DUMP);
  rules.header(g);
  rules.attr_str(NFTA_RULE_TABLE, name);
  if (const int e = rules.send_only(dump.get()))
    return std::unexpected(sys_error("list the rules of", name, e));
  int count = 0;
  bool done = false;
  alignas(nlmsghdr) char buf[32768];
  while (!done) {
    const ssize_t n = ::recv(dump.get(), buf, sizeof buf, 0);
    if (n < 0) return std::unexpected(sys_error("list the rules of", name, errno));
    std::size_t left = static_cast<std::size_t>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(buf); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) done = true;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const int err = -reinterpret_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        if (err != 0) return std::unexpected(sys_error("list the rules of", name, err));
        done = true;
      }
      if (h->nlmsg_type == nft_type(NFT_MSG_NEWRULE)) ++count;
    }
  }
  return count;
}

}  // namespace brig::jail::netfilter
