// Whether this process can give a jail network mode `filtered`: the
// launcher makes a veth in the host's network namespace and brig-netfilter
// loads the host's NAT rules there, which needs CAP_NET_ADMIN, and the host
// must forward.
#pragma once

#include <optional>
#include <string>

namespace brig::jail::netfilter {

// Why not, with the remedy ("network mode filtered needs root or
// CAP_NET_ADMIN, ...: run brig as root, or use mode proxy"); nullopt: it
// can. Reads capget(2) and /proc/sys/net/ipv4/ip_forward.
std::optional<std::string> filtered_unavailable();

}  // namespace brig::jail::netfilter
