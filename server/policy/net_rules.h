// The network policy's rules as values: `allow`/`deny` entries (a name,
// `*.domain`, an IP or a CIDR, each with an optional `:port`) and the static
// `hosts`, and the decisions the egress proxy and the DNS stub make with
// them. Pure: no I/O, no resolving (the proxy resolves, then asks
// address_permitted).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jail/base/error.h"

namespace brig::policy {

// An IPv4 or IPv6 address; IPv4 in bytes[0..3].
struct Address {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};
  friend bool operator==(const Address&, const Address&) = default;
};

// "10.1.2.7", "::1", "[::1]" (brackets allowed); nullopt if it is not one.
std::optional<Address> parse_address(std::string_view text);
std::string address_text(const Address& a);  // "10.1.2.7", "::1"
// The IPv4 address `a` is or carries (IPv4-mapped, NAT64); nullopt for
// other IPv6 addresses.
std::optional<std::array<std::uint8_t, 4>> ipv4_of(const Address& a);

struct NetRule {
  enum class Kind {
    name,        // "pypi.org": that name only
    subdomains,  // "*.pythonhosted.org": names under the domain, not the domain itself
    address,     // "10.1.2.7", "[::1]"
    network,     // "10.1.2.0/24", "fd00::/8"
  };
  Kind kind = Kind::name;
  std::string name;  // name, subdomains: lower-case, no trailing dot ("pythonhosted.org")
  Address address;   // address, network (host bits zero)
  int prefix = 0;    // network: the prefix length; address: 32 or 128
  std::optional<std::uint16_t> port;  // nullopt: 80 and 443 in allow, every port in deny
  std::string text;                   // as written in the policy
  friend bool operator==(const NetRule&, const NetRule&) = default;
};

// One entry; the error's message says what is wrong ("port 70000 is out of
// range 1-65535", "`*` alone would allow every name: name a domain",
// "`*.*.com`: only one leading `*.` is allowed", "256.0.0.1 is not an IPv4
// address").
Result<NetRule> parse_net_rule(std::string_view text);

// A static name of `hosts`: lower-case, no trailing dot.
struct StaticHost {
  std::string name;
  Address address;
  friend bool operator==(const StaticHost&, const StaticHost&) = default;
};

struct NetRules {
  std::vector<NetRule> allow;
  std::vector<NetRule> deny;  // wins over allow
  std::vector<StaticHost> hosts;
  // Not from the policy: in a `filtered` jail, the addresses the allowed
  // names resolved to when it started, which its kernel rules let through
  // (net_filter.h). The proxy and the DNS stub answer those names with
  // these alone, so what the jail resolves is what it can reach directly.
  std::vector<StaticHost> pinned;
  friend bool operator==(const NetRules&, const NetRules&) = default;
};

// Is `port` on `host` (a name, any case, maybe with a trailing dot, or a
// literal address) allowed before resolving? `rule`: the deny rule that
// refused it, or the allow rule that allowed it; nullptr when no rule
// allowed it.
struct NetVerdict {
  bool allowed = false;
  const NetRule* rule = nullptr;
};
NetVerdict decide(const NetRules& rules, std::string_view host, std::uint16_t port);

// After resolving an allowed name: may the proxy connect to `address` for
// it? false when a deny rule names the address, or when the address is
// loopback, link-local, private or otherwise not global (net_rules.cc,
// kNonGlobal: 127/8, 10/8, 169.254/16, Azure's 168.63.129.16, ::/96,
// fc00::/7, fe80::/10, 6to4, Teredo, local-use NAT64, …) and the policy did
// not name it: neither a `hosts` entry of `host` nor an address or network
// allow rule covering it on `port`. DNS rebinding stops here. Every
// comparison takes the IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96)
// forms as the IPv4 address they carry, and an IPv6 network never holds an
// IPv4 address (`::/0` is not 127.0.0.1).
bool address_permitted(const NetRules& rules, std::string_view host, const Address& address,
                       std::uint16_t port);

// Whether the policy names `address` for `host` on `port`: a `hosts` entry
// of that very name, or an address or network allow rule covering it. What
// a non-global address needs, and what the proxy asks of an address that
// turns out to be this host's own.
bool address_named(const NetRules& rules, std::string_view host, const Address& address,
                   std::uint16_t port);

// `hosts` addresses of `name` (any case, trailing dot ignored); empty if none.
std::vector<Address> static_addresses(const NetRules& rules, std::string_view name);

// What the proxy and the DNS stub use for `name` instead of resolving it:
// its `hosts` addresses, else its `pinned` ones; empty: resolve it.
std::vector<Address> fixed_addresses(const NetRules& rules, std::string_view name);

// Would any port of `name` be allowed (the DNS stub answers only those)?
bool name_allowed(const NetRules& rules, std::string_view name);

// What to add to the policy to allow `host:port`, for a refusal's body:
// `allow_add = ["host:port"]`.
std::string allow_hint(std::string_view host, std::uint16_t port);

}  // namespace brig::policy
