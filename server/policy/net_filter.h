// A `filtered` jail's kernel rules (jail::NetFilter) from the policy's
// network rules and what its names resolved to when the jail starts. Pure.
//
// IPv4 only: the jail's veth has no IPv6. An address or CIDR rule becomes
// an entry as written; a name rule, one entry per resolved address the
// proxy would also accept for it (address_permitted: no loopback, private
// or other non-global address the policy did not name); a `*.domain` rule
// none, since no address stands for the names under a domain: those go
// through the proxy. An allow rule without a port means 80 and 443, a deny
// rule without one every port, as for the proxy.
#pragma once

#include <string>
#include <vector>

#include "jail/spec.h"
#include "server/policy/net_rules.h"

namespace brig::policy {

// The names whose addresses the kernel rules need: every `name` rule of
// allow and deny that no `hosts` entry answers, each once, lower-case.
std::vector<std::string> names_to_pin(const NetRules& rules);

// The rules with `resolved` (name, address pairs: what names_to_pin's
// names resolved to) kept in `pinned` where the proxy would accept the
// address for that name on some port an allow rule of it names.
NetRules with_pins(NetRules rules, const std::vector<StaticHost>& resolved);

// The allow and deny entries for `rules` (with_pins done: `hosts` and
// `pinned` give the names' addresses). The program path is left empty.
jail::NetFilter net_filter(const NetRules& rules);

}  // namespace brig::policy
