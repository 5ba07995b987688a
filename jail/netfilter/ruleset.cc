#include "jail/netfilter/ruleset.h"

#include <string>
#include <vector>

namespace brig::jail::netfilter {

std::uint32_t host_address(std::uint32_t index) {
  return kSubnet + index * 4 + 1;
}
std::uint32_t jail_address(std::uint32_t index) {
  return kSubnet + index * 4 + 2;
}

std::string ipv4_text(std::uint32_t a) {
  return std::to_string(a >> 24) + '.' + std::to_string((a >> 16) & 0xff) + '.' +
         std::to_string((a >> 8) & 0xff) + '.' + std::to_string(a & 0xff);
}

std::string host_ruleset() {
  const std::string veths = std::string("\"") + kVethPrefix + "*\"";
  const std::string subnet = ipv4_text(kSubnet) + "/" + std::to_string(kSubnetPrefix);
  return "table inet brig_filtered {}\n"
         "flush table inet brig_filtered\n"
         "table inet brig_filtered {\n"
         "  chain postrouting {\n"
         "    type nat hook postrouting priority srcnat; policy accept;\n"
         "    ip saddr " +
         subnet + " oifname != " + veths +
         " masquerade\n"
         "  }\n"
         "  chain prerouting {\n"
         "    type filter hook prerouting priority -150; policy accept;\n"
         // Before any DNAT (priority -100): a jail's packet to one of the
         // host's own addresses must not be forwarded on to wherever a
         // port of the host is published (a container's, say).
         "    iifname " +
         veths +
         " fib daddr type local drop\n"
         "  }\n"
         "  chain forward {\n"
         "    type filter hook forward priority filter; policy accept;\n"
         // A jail cannot change its address or send IPv6 (no capability,
         // and its own rules): dropped here too, should that ever fail.
         "    iifname " +
         veths + " ip saddr != " + subnet +
         " drop\n"
         "    iifname " +
         veths +
         " meta nfproto ipv6 drop\n"
         // Another jail, and anything from outside, reach a jail only as
         // replies to what it started.
         "    iifname " +
         veths + " oifname " + veths +
         " drop\n"
         "    oifname " +
         veths +
         " ct state established,related accept\n"
         "    oifname " +
         veths +
         " drop\n"
         "  }\n"
         "  chain input {\n"
         "    type filter hook input priority filter; policy accept;\n"
         // The host's own services (its veth end, its other addresses) are
         // not the jail's to reach: its allowed destinations are elsewhere.
         "    iifname " +
         veths +
         " ct state established,related accept\n"
         "    iifname " +
         veths +
         " drop\n"
         "  }\n"
         "}\n";
}

int host_rule_count() {
  // A rule is a chain's line after its `type` line: four spaces in.
  const std::string text = host_ruleset();
  int rules = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    if (line.starts_with("    ") && !line.starts_with("    type ")) ++rules;
    at = end + 1;
  }
  return rules;
}

}  // namespace brig::jail::netfilter
