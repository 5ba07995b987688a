// PeerAllowList: which local users may talk to a listening brig.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <string>
#include <vector>

#include "server/process/peer_credentials.h"

namespace brig::transport {

// A peer is allowed when its uid is in uids or its primary gid is in gids.
// Empty lists allow nobody; `brig serve` always puts its own euid in uids.
struct PeerAllowList {
  std::vector<uid_t> uids;
  std::vector<gid_t> gids;

  bool allows(const process::PeerCredentials& peer) const {
    return std::find(uids.begin(), uids.end(), peer.uid) != uids.end() ||
           std::find(gids.begin(), gids.end(), peer.gid) != gids.end();
  }
  // "uids 1000, 1001; gids 100", for logs and refusals.
  std::string to_string() const;
};

}  // namespace brig::transport
