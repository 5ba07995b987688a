// The addresses a `filtered` jail's names resolve to when it starts, for its
// kernel rules and its DNS stub (policy/net_filter.h): resolved here, before
// the jail is made, with the relay's c-ares Resolver run to completion on
// the caller's thread (`brig run` may have no thread at the jail's clone).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "server/policy/net_rules.h"

namespace brig::egress {

struct Pins {
  std::vector<policy::StaticHost> resolved;  // name, address: every address of every name
  std::vector<std::string> unresolved;       // "name: why", for a warning
};

// Resolves `names` (IPv4 only: a filtered jail has no IPv6 route) through
// /etc/hosts and the host's resolv.conf, or `servers` ("127.0.0.1:5353"),
// all within `timeout`. A name that does not resolve is in `unresolved`;
// fails only when the resolver cannot be made.
Result<Pins> resolve_pins(const std::vector<std::string>& names,
                          const std::vector<std::string>& servers,
                          std::chrono::milliseconds timeout);

// A filtered jail's rules, ready to plan: refuses, with the reason and the
// remedy, where this process cannot give a jail that mode
// (jail::netfilter::filtered_unavailable); resolves the names the kernel
// rules need (5 s at most) and keeps them in rules.pinned. Returns a
// warning per name that did not resolve (its direct connections fail; the
// proxy may still reach it).
Result<std::vector<std::string>> prepare_filtered(policy::NetRules& rules);

}  // namespace brig::egress
