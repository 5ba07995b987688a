// The host's nftables table of network mode `filtered`, as text for
// libnftables (brig-netfilter), and the addresses and names of the jails'
// veths. Pure functions, so what the host gets can be read and tested
// without a kernel. (Each jail's own table: jail_rules.h.)
//
// The host's namespace gets table `inet brig_filtered`, one for every
// filtered jail: the jails' addresses masqueraded, nothing forwarded
// between two jails or from outside into one, and nothing from a jail to
// the host itself.
#pragma once

#include <cstdint>
#include <string>

#include "jail/spec.h"

namespace brig::jail::netfilter {

// The jails' addresses: 10.213.0.0/16, a /30 each (kMaxVeths of them).
inline constexpr std::uint32_t kSubnet = 0x0ad50000;  // 10.213.0.0
inline constexpr int kSubnetPrefix = 16;
inline constexpr std::uint32_t kMaxVeths = 1u << (32 - kSubnetPrefix - 2);
// The host end of jail i's veth is kVethPrefix + i ("brigf0"); the jail's
// end is "eth0". The host's rules match every name with the prefix.
inline constexpr const char* kVethPrefix = "brigf";

// Jail `index`'s addresses: the host end (.1 of its /30) and the jail's (.2).
std::uint32_t host_address(std::uint32_t index);
std::uint32_t jail_address(std::uint32_t index);
std::string ipv4_text(std::uint32_t address);  // "10.213.0.1"

// The host's table, replaced whole in one transaction (so loading it again,
// from any number of jails at once, leaves exactly one copy).
std::string host_ruleset();

// How many rules host_ruleset() has: the table is loaded again when the
// kernel holds another number (a flushed ruleset, an older brig's).
int host_rule_count();

}  // namespace brig::jail::netfilter
