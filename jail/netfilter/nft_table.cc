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

Result<bool> inet_table_exists(const std::string& name) {
  UniqueFd sock(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
  if (!sock) return std::unexpected(sys_error("open", "an nfnetlink socket", errno));
  NetlinkRequest r(static_cast<std::uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE), 0);
  nfgenmsg g{};
  g.nfgen_family = NFPROTO_INET;
  g.version = NFNETLINK_V0;
  r.header(g);
  r.attr_str(NFTA_TABLE_NAME, name);
  std::uint16_t type = 0;
  const int e = r.send(sock.get(), &type);
  if (e == ENOENT) return false;
  if (e != 0) return std::unexpected(sys_error("look for the nftables table", name, e));
  return type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWTABLE);
}

}  // namespace brig::jail::netfilter
