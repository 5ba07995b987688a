#include "server/policy/net_filter.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

namespace brig::policy {
namespace {

using Entry = jail::NetFilter::Entry;

// The ports a rule stands for, as ranges.
std::vector<std::pair<std::uint16_t, std::uint16_t>> port_ranges(const NetRule& r, bool deny) {
  if (r.port) return {{*r.port, *r.port}};
  if (deny) return {{1, 65535}};
  return {{80, 80}, {443, 443}};
}

void add(std::vector<Entry>& out, std::array<std::uint8_t, 4> address, int prefix, const NetRule& r,
         bool deny) {
  for (auto [first, last] : port_ranges(r, deny)) {
    Entry e{address, static_cast<std::uint8_t>(prefix), first, last};
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  }
}

// A network rule's IPv4 network, from an IPv4 CIDR or an IPv6 one that
// carries IPv4 (::ffff:a.b.c.d/104 and up); host bits cleared.
std::optional<std::pair<std::array<std::uint8_t, 4>, int>> ipv4_network(const NetRule& r) {
  auto v4 = ipv4_of(r.address);
  if (!v4) return std::nullopt;
  int prefix = r.address.v6 ? r.prefix - 96 : r.prefix;
  if (r.kind == NetRule::Kind::address) prefix = 32;
  if (prefix < 0) return std::nullopt;  // wider than IPv4: not expressible as one network
  std::uint32_t a = (std::uint32_t{(*v4)[0]} << 24) | (std::uint32_t{(*v4)[1]} << 16) |
                    (std::uint32_t{(*v4)[2]} << 8) | (*v4)[3];
  if (prefix < 32) a &= prefix == 0 ? 0 : ~(0xffffffffu >> prefix);
  return std::pair{std::array<std::uint8_t, 4>{
                       static_cast<std::uint8_t>(a >> 24), static_cast<std::uint8_t>(a >> 16),
                       static_cast<std::uint8_t>(a >> 8), static_cast<std::uint8_t>(a)},
                   prefix};
}

}  // namespace

std::vector<std::string> names_to_pin(const NetRules& rules) {
  std::vector<std::string> out;
  for (const auto* list : {&rules.allow, &rules.deny}) {
    for (const NetRule& r : *list) {
      if (r.kind != NetRule::Kind::name || !static_addresses(rules, r.name).empty()) continue;
      if (std::find(out.begin(), out.end(), r.name) == out.end()) out.push_back(r.name);
    }
  }
  return out;
}

NetRules with_pins(NetRules rules, const std::vector<StaticHost>& resolved) {
  rules.pinned.clear();
  for (const StaticHost& h : resolved) {
    bool kept = false;
    for (const NetRule& a : rules.allow) {
      if (a.kind != NetRule::Kind::name || a.name != h.name) continue;
      for (auto [port, last] : port_ranges(a, false)) {
        (void)last;
        kept = kept || address_permitted(rules, h.name, h.address, port);
      }
    }
    // A denied name's addresses are pinned too: the deny entries need them.
    for (const NetRule& d : rules.deny)
      kept = kept || (d.kind == NetRule::Kind::name && d.name == h.name);
    if (kept && std::find(rules.pinned.begin(), rules.pinned.end(), h) == rules.pinned.end())
      rules.pinned.push_back(h);
  }
  return rules;
}

jail::NetFilter net_filter(const NetRules& rules) {
  jail::NetFilter f;
  for (const NetRule& d : rules.deny) {
    if (d.kind == NetRule::Kind::address || d.kind == NetRule::Kind::network) {
      if (auto net = ipv4_network(d)) add(f.deny, net->first, net->second, d, true);
    } else if (d.kind == NetRule::Kind::name) {
      for (const Address& a : fixed_addresses(rules, d.name))
        if (auto v4 = ipv4_of(a)) add(f.deny, *v4, 32, d, true);
    }
  }
  for (const NetRule& r : rules.allow) {
    if (r.kind == NetRule::Kind::address || r.kind == NetRule::Kind::network) {
      if (auto net = ipv4_network(r)) add(f.allow, net->first, net->second, r, false);
    } else if (r.kind == NetRule::Kind::name) {
      // What the proxy would connect to for this name and port, no more:
      // a name resolving to loopback reaches it only if the policy says so.
      for (const Address& a : fixed_addresses(rules, r.name)) {
        auto v4 = ipv4_of(a);
        if (!v4) continue;
        for (auto [port, last] : port_ranges(r, false)) {
          if (!address_permitted(rules, r.name, a, port)) continue;
          Entry e{*v4, 32, port, last};
          if (std::find(f.allow.begin(), f.allow.end(), e) == f.allow.end()) f.allow.push_back(e);
        }
      }
    }
  }
  return f;
}

}  // namespace brig::policy
