// The veth of a `filtered` jail, through rtnetlink: its host end in the
// namespace brig-netfilter starts in, its jail end ("eth0") made directly in
// the jail's namespace, so no interface ever lies in both.
#pragma once

#include <cstdint>
#include <string>

#include "jail/base/error.h"

namespace brig::jail::netfilter {

// Makes the pair for the first free index from `start` on (kMaxVeths of
// them, wrapping): an index is free when no host interface has its name,
// so concurrent brig processes never share one. Returns the index.
Result<std::uint32_t> create_veth(int jail_netns, std::uint32_t start);

// `ifname` (in the caller's namespace) gets `address`/`prefix` and goes up.
Result<void> address_and_up(const std::string& ifname, std::uint32_t address, int prefix);

// The caller's namespace routes everything via `gateway`.
Result<void> default_route(std::uint32_t gateway);

}  // namespace brig::jail::netfilter
