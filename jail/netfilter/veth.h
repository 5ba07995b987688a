// The veth of a `filtered` jail, through rtnetlink: its host end in the
// launcher's namespace, its jail end ("eth0") made directly in the jail's
// namespace, so no interface ever lies in both. The jail's end is set up
// through an rtnetlink socket opened in the jail's namespace (net.h), so
// the launcher never joins it.
#pragma once

#include <cstdint>
#include <string>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"

namespace brig::jail::netfilter {

// The jail's end has this interface index: its namespace is new, with only
// lo (1), so the index is known without asking.
inline constexpr unsigned kJailIfindex = 2;

// Makes the pair for the first free index from `start` on (kMaxVeths of
// them, wrapping): an index is free when no host interface has its name,
// so concurrent brig processes never share one. Returns the index.
Result<std::uint32_t> create_veth(int jail_netns, std::uint32_t start);

// Interface `ifindex` of `route_sock`'s namespace (named `ifname` in
// errors) gets `address`/`prefix` and goes up.
Result<void> address_and_up(int route_sock, unsigned ifindex, const std::string& ifname,
                            std::uint32_t address, int prefix);

// `route_sock`'s namespace routes everything via `gateway`.
Result<void> default_route(int route_sock, std::uint32_t gateway);

// An rtnetlink socket of the caller's namespace.
Result<UniqueFd> open_rtnetlink();

// The veth's name on the host for `index`.
std::string veth_name(std::uint32_t index);

}  // namespace brig::jail::netfilter
