#include "server/transport/peer_allow_list.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace brig::transport {

std::string PeerAllowList::to_string() const {
  std::string s = uids.empty() ? "no uids" : fmt::format("uids {}", fmt::join(uids, ", "));
  if (!gids.empty()) s += fmt::format("; gids {}", fmt::join(gids, ", "));
  return s;
}

}  // namespace brig::transport
