#include "server/policy/net_rules.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "jail/base/ascii.h"
#include "server/policy/toml_text.h"

namespace brig::policy {
namespace {

constexpr size_t kMaxName = 253;  // RFC 1035, without the trailing dot
constexpr size_t kMaxLabel = 63;

Error rule_error(std::string_view text, std::string why) {
  return Error{"read a network rule", std::string(text), std::move(why)};
}

bool all_of(std::string_view s, bool (*pred)(char)) {
  return std::all_of(s.begin(), s.end(), pred);
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_digit_or_dot(char c) {
  return is_digit(c) || c == '.';
}

// Lower-case, without one trailing dot: the form rules and hosts keep names in.
std::string normal_name(std::string_view name) {
  if (name.ends_with('.')) name.remove_suffix(1);
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
  return out;
}

// An address in the one form every comparison uses: 16 bytes, an IPv4
// address as ::ffff:a.b.c.d. IPv6 forms that carry an IPv4 address to it —
// IPv4-mapped (::ffff:0:0/96) and the well-known NAT64 prefix
// (64:ff9b::/96, which a NAT64 gateway translates to that IPv4 address) —
// become that IPv4 address, so that a deny of 93.184.216.0/24 also holds
// where DNS64 answers 64:ff9b::5db8:d822.
struct Canonical {
  std::array<std::uint8_t, 16> bytes{};
  bool v4 = false;
};
Canonical canonical(const Address& a) {
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr std::uint8_t kNat64[12] = {0x00, 0x64, 0xff, 0x9b};
  Canonical c;
  const std::uint8_t* v4 = nullptr;
  if (!a.v6)
    v4 = a.bytes.data();
  else if (std::equal(kMapped, kMapped + 12, a.bytes.begin()) ||
           std::equal(kNat64, kNat64 + 12, a.bytes.begin()))
    v4 = a.bytes.data() + 12;
  if (v4 == nullptr) {
    c.bytes = a.bytes;
    return c;
  }
  std::copy_n(kMapped, 12, c.bytes.begin());
  std::copy_n(v4, 4, c.bytes.begin() + 12);
  c.v4 = true;
  return c;
}

bool prefix_matches(const std::array<std::uint8_t, 16>& a, const std::array<std::uint8_t, 16>& net,
                    int prefix) {
  for (int i = 0; i < 16 && prefix > 0; ++i, prefix -= 8) {
    const std::uint8_t mask = prefix >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - prefix));
    if ((a[i] & mask) != (net[i] & mask)) return false;
  }
  return true;
}

// Without a port, an allow rule means the web's ports, 80 and 443; a deny
// rule means every port: `deny = ["db.example"]` must not leave
// db.example:5432 to some `*.example:5432` allow.
enum class Side { allow, deny };
bool port_matches(const NetRule& r, std::uint16_t port, Side side = Side::allow) {
  if (r.port) return *r.port == port;
  return side == Side::deny || port == 80 || port == 443;
}

// Whether network `net`/`prefix` (as written: an IPv4 prefix counts from
// the IPv4 address) holds `a`. An IPv4 address is only ever held by a
// network of IPv4 addresses: `::/0` means every IPv6 address, not 127.0.0.1
// through its mapped form.
bool in_network(const Address& a, const Address& net, int prefix) {
  const Canonical ca = canonical(a), cn = canonical(net);
  if (ca.v4 != cn.v4) return false;
  const int bits = !cn.v4 ? prefix : net.v6 ? std::max(prefix, 96) : prefix + 96;
  return prefix_matches(ca.bytes, cn.bytes, bits);
}

bool covers_address(const NetRule& r, const Address& a) {
  if (r.kind != NetRule::Kind::address && r.kind != NetRule::Kind::network) return false;
  return in_network(a, r.address, r.prefix);
}

// `name`: lower-case, no trailing dot.
bool covers_name(const NetRule& r, std::string_view name) {
  if (r.kind == NetRule::Kind::name) return name == r.name;
  if (r.kind != NetRule::Kind::subdomains) return false;
  return name.size() > r.name.size() + 1 && name.ends_with(r.name) &&
         name[name.size() - r.name.size() - 1] == '.';
}

// What a host (as a client named it) is: a literal address, or a name in
// normal form. Brackets are accepted around an IPv6 literal.
struct Host {
  std::optional<Address> address;
  std::string name;
};
Host host_of(std::string_view host) {
  if (auto a = parse_address(host)) return Host{a, ""};
  return Host{std::nullopt, normal_name(host)};
}

const NetRule* first_match(const std::vector<NetRule>& rules, const Host& h, std::uint16_t port,
                           Side side) {
  for (const NetRule& r : rules) {
    if (!port_matches(r, port, side)) continue;
    if (h.address ? covers_address(r, *h.address) : covers_name(r, h.name)) return &r;
  }
  return nullptr;
}

struct Range {
  const char* network;
  int prefix;
};
// Not reachable on the internet, or meaningful only on this host, its link
// or its cloud: where a name resolving there would lead the proxy somewhere
// the policy did not name. NAT64's and the mapped forms count as the IPv4
// address they carry (canonical); the other IPv6 forms that carry one
// (6to4, Teredo, local-use NAT64) are refused whole rather than decoded.
constexpr Range kNonGlobal[] = {
    {"0.0.0.0", 8},
    {"10.0.0.0", 8},
    {"100.64.0.0", 10},
    {"127.0.0.0", 8},
    {"169.254.0.0", 16},
    {"172.16.0.0", 12},
    {"192.0.0.0", 24},
    {"192.0.2.0", 24},
    {"192.168.0.0", 16},
    {"198.18.0.0", 15},
    {"198.51.100.0", 24},
    {"203.0.113.0", 24},
    {"224.0.0.0", 3},       // multicast, reserved and broadcast
    {"168.63.129.16", 32},  // Azure's wireserver (metadata, DNS), as 169.254.169.254 elsewhere
    {"::", 96},             // unspecified, loopback and the deprecated IPv4-compatible forms
    {"64:ff9b:1::", 48},    // local-use NAT64
    {"100::", 64},          // discard-only
    {"2001::", 32},         // Teredo
    {"2001:db8::", 32},     // documentation
    {"2002::", 16},         // 6to4
    {"fc00::", 7},
    {"fe80::", 10},
    {"fec0::", 10},
    {"ff00::", 8},
};

bool non_global(const Address& a) {
  return std::any_of(std::begin(kNonGlobal), std::end(kNonGlobal), [&](const Range& r) {
    return in_network(a, *parse_address(r.network), r.prefix);
  });
}

Result<std::uint16_t> parse_port(std::string_view text, std::string_view port) {
  if (port.empty())
    return std::unexpected(rule_error(text, "a port must follow ':' (like \"pypi.org:8443\")"));
  if (!all_of(port, is_digit)) {
    return std::unexpected(rule_error(
        text, fmt::format("\"{}\" is not a port; write a number from 1 to 65535", port)));
  }
  unsigned long n = 0;
  for (char c : port) n = std::min(n * 10 + static_cast<unsigned long>(c - '0'), 1000000ul);
  if (n == 0 || n > 65535) {
    return std::unexpected(rule_error(text, fmt::format("port {} is out of range 1-65535", port)));
  }
  return static_cast<std::uint16_t>(n);
}

// A literal address, with the message saying which family it fails as.
Result<Address> parse_literal(std::string_view text, std::string_view literal) {
  if (auto a = parse_address(literal)) return *a;
  const bool v6 = literal.find(':') != std::string_view::npos;
  return std::unexpected(
      rule_error(text, fmt::format("{} is not an {} address", literal, v6 ? "IPv6" : "IPv4")));
}

// "10.1.2.0/24": the network with its host bits zero.
Result<NetRule> parse_network(std::string_view text, std::string_view literal,
                              std::string_view prefix_text) {
  NetRule r;
  r.kind = NetRule::Kind::network;
  r.address = BRIG_TRY(parse_literal(text, literal));
  const int max = r.address.v6 ? 128 : 32;
  if (prefix_text.empty() || !all_of(prefix_text, is_digit) || prefix_text.size() > 3 ||
      std::stoi(std::string(prefix_text)) > max) {
    return std::unexpected(
        rule_error(text, fmt::format("prefix /{} is out of range 0-{} for an {} network",
                                     prefix_text, max, r.address.v6 ? "IPv6" : "IPv4")));
  }
  r.prefix = std::stoi(std::string(prefix_text));
  Address net = r.address;
  for (int bit = r.prefix; bit < max; ++bit)
    net.bytes[bit / 8] &= static_cast<std::uint8_t>(~(0x80 >> (bit % 8)));
  if (net != r.address) {
    return std::unexpected(
        rule_error(text, fmt::format("{}/{} has host bits set; write the network {}/{}", literal,
                                     r.prefix, address_text(net), r.prefix)));
  }
  return r;
}

// A name or `*.domain`, already without its port.
Result<NetRule> parse_name(std::string_view text, std::string_view host) {
  NetRule r;
  if (host == "*" || host == "*.") {
    return std::unexpected(rule_error(
        text, "`*` alone would allow every name: name a domain, like \"*.example.com\""));
  }
  if (host.starts_with("*.")) {
    r.kind = NetRule::Kind::subdomains;
    host.remove_prefix(2);
  }
  if (host.find('*') != std::string_view::npos) {
    return std::unexpected(rule_error(
        text, host.starts_with("*.")
                  ? fmt::format("`{}`: only one leading `*.` is allowed", text)
                  : fmt::format("`{}`: `*` may only lead a name, as in \"*.example.com\"", text)));
  }
  r.name = normal_name(host);
  if (r.name.empty()) {
    return std::unexpected(rule_error(
        text, "an empty name allows nothing; write a name like \"pypi.org\" or \"*.example.com\""));
  }
  if (r.name.size() > kMaxName) {
    return std::unexpected(
        rule_error(text, fmt::format("the name is {} bytes long; a DNS name has at most {}",
                                     r.name.size(), kMaxName)));
  }
  if (all_of(r.name, is_digit_or_dot)) {
    return std::unexpected(rule_error(text, fmt::format("{} is not an IPv4 address", host)));
  }
  for (size_t start = 0; start <= r.name.size();) {
    size_t end = r.name.find('.', start);
    if (end == std::string::npos) end = r.name.size();
    const std::string_view label = std::string_view(r.name).substr(start, end - start);
    if (label.empty()) {
      return std::unexpected(rule_error(
          text, start == 0 && r.kind == NetRule::Kind::name
                    ? fmt::format("`{}` starts with an empty label; write \"*{}\" for the names "
                                  "under a domain",
                                  text, host)
                    : fmt::format("`{}` has an empty label (two dots in a row, or a dot at the "
                                  "start)",
                                  text)));
    }
    if (label.size() > kMaxLabel) {
      return std::unexpected(rule_error(
          text, fmt::format("the label \"{}\" is {} bytes long; a DNS label has at most {}", label,
                            label.size(), kMaxLabel)));
    }
    for (char c : label) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        return std::unexpected(rule_error(
            text, "a name outside ASCII: write an internationalized name in its \"xn--\" form"));
      }
      if (!(is_digit(c) || (c >= 'a' && c <= 'z') || c == '-' || c == '_')) {
        return std::unexpected(rule_error(
            text, fmt::format("'{}' cannot be in a name; a name has letters, digits, '-' and '_' "
                              "between dots",
                              c)));
      }
    }
    start = end + 1;
  }
  return r;
}

}  // namespace

std::optional<Address> parse_address(std::string_view text) {
  const bool bracketed = text.starts_with('[') && text.ends_with(']') && text.size() >= 2;
  if (bracketed) text = text.substr(1, text.size() - 2);
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  char buf[INET6_ADDRSTRLEN];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  Address a;
  if (!bracketed && ::inet_pton(AF_INET, buf, a.bytes.data()) == 1) return a;
  if (::inet_pton(AF_INET6, buf, a.bytes.data()) == 1) {
    a.v6 = true;
    return a;
  }
  return std::nullopt;
}

std::optional<std::array<std::uint8_t, 4>> ipv4_of(const Address& a) {
  const Canonical c = canonical(a);
  if (!c.v4) return std::nullopt;
  std::array<std::uint8_t, 4> out{};
  std::copy_n(c.bytes.begin() + 12, 4, out.begin());
  return out;
}

std::string address_text(const Address& a) {
  char buf[INET6_ADDRSTRLEN];
  if (::inet_ntop(a.v6 ? AF_INET6 : AF_INET, a.bytes.data(), buf, sizeof buf) == nullptr)
    return "?";
  return buf;
}

Result<NetRule> parse_net_rule(std::string_view text) {
  if (text.empty()) {
    return std::unexpected(rule_error(text,
                                      "an empty entry; write a name like \"pypi.org\", "
                                      "\"*.pythonhosted.org\", an address or a CIDR, each with an "
                                      "optional \":port\""));
  }
  std::string_view host = text;
  std::optional<std::uint16_t> port;
  std::string_view prefix;
  bool has_prefix = false;
  if (host.starts_with('[')) {
    // [v6], [v6]:port, [v6/len]:port or [v6]/len:port
    const size_t close = host.find(']');
    if (close == std::string_view::npos) {
      return std::unexpected(
          rule_error(text, "'[' without ']'; write an IPv6 address as \"[::1]:8080\""));
    }
    std::string_view rest = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (rest.starts_with('/')) {
      const size_t colon = rest.find(':');
      prefix = rest.substr(1, colon == std::string_view::npos ? std::string_view::npos : colon - 1);
      has_prefix = true;
      rest = colon == std::string_view::npos ? "" : rest.substr(colon);
    }
    if (!rest.empty()) {
      if (!rest.starts_with(':')) {
        return std::unexpected(
            rule_error(text, fmt::format("\"{}\" after ']'; only a \":port\" may follow", rest)));
      }
      port = BRIG_TRY(parse_port(text, rest.substr(1)));
    }
    if (const size_t slash = host.find('/'); slash != std::string_view::npos) {
      if (has_prefix) return std::unexpected(rule_error(text, "two prefix lengths"));
      prefix = host.substr(slash + 1);
      has_prefix = true;
      host = host.substr(0, slash);
    }
    if (host.find(':') == std::string_view::npos) {
      return std::unexpected(
          rule_error(text, fmt::format("brackets hold an IPv6 address; \"{}\" is not one", host)));
    }
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    const size_t colon = host.find(':');
    port = BRIG_TRY(parse_port(text, host.substr(colon + 1)));
    host = host.substr(0, colon);
  }  // else an IPv6 address without brackets (and so without a port), or no port
  if (!has_prefix) {
    if (const size_t slash = host.find('/'); slash != std::string_view::npos) {
      prefix = host.substr(slash + 1);
      has_prefix = true;
      host = host.substr(0, slash);
    }
  }

  NetRule r;
  if (has_prefix) {
    r = BRIG_TRY(parse_network(text, host, prefix));
  } else if (host.find(':') != std::string_view::npos) {
    r.kind = NetRule::Kind::address;
    r.address = BRIG_TRY(parse_literal(text, host));
    r.prefix = 128;
  } else if (auto a = parse_address(host)) {
    r.kind = NetRule::Kind::address;
    r.address = *a;
    r.prefix = 32;
  } else {
    r = BRIG_TRY(parse_name(text, host));
  }
  r.port = port;
  r.text = std::string(text);
  return r;
}

NetVerdict decide(const NetRules& rules, std::string_view host, std::uint16_t port) {
  const Host h = host_of(host);
  if (!h.address && h.name.empty()) return {};
  if (const NetRule* d = first_match(rules.deny, h, port, Side::deny)) return NetVerdict{false, d};
  if (const NetRule* a = first_match(rules.allow, h, port, Side::allow)) return NetVerdict{true, a};
  return {};
}

bool address_permitted(const NetRules& rules, std::string_view host, const Address& address,
                       std::uint16_t port) {
  for (const NetRule& d : rules.deny) {
    if (port_matches(d, port, Side::deny) && covers_address(d, address)) return false;
  }
  return !non_global(address) || address_named(rules, host, address, port);
}

bool address_named(const NetRules& rules, std::string_view host, const Address& address,
                   std::uint16_t port) {
  for (const Address& a : static_addresses(rules, host)) {
    if (canonical(a).bytes == canonical(address).bytes) return true;
  }
  return std::any_of(rules.allow.begin(), rules.allow.end(), [&](const NetRule& a) {
    return port_matches(a, port) && covers_address(a, address);
  });
}

std::vector<Address> static_addresses(const NetRules& rules, std::string_view name) {
  const std::string n = normal_name(name);
  std::vector<Address> out;
  for (const StaticHost& h : rules.hosts) {
    if (h.name == n) out.push_back(h.address);
  }
  return out;
}

std::vector<Address> fixed_addresses(const NetRules& rules, std::string_view name) {
  std::vector<Address> out = static_addresses(rules, name);
  if (!out.empty()) return out;
  const std::string n = normal_name(name);
  for (const StaticHost& h : rules.pinned) {
    if (h.name == n) out.push_back(h.address);
  }
  return out;
}

bool name_allowed(const NetRules& rules, std::string_view name) {
  const Host h = host_of(name);
  // Only the ports an allow rule of this name names can be allowed; each is
  // decided as the proxy would, so a deny of that port wins.
  for (const NetRule& a : rules.allow) {
    if (h.address ? !covers_address(a, *h.address) : !covers_name(a, h.name)) continue;
    for (std::uint16_t port :
         a.port ? std::vector<std::uint16_t>{*a.port} : std::vector<std::uint16_t>{80, 443}) {
      if (decide(rules, name, port).allowed) return true;
    }
  }
  return false;
}

std::string allow_hint(std::string_view host, std::uint16_t port) {
  const Host h = host_of(host);
  std::string entry;
  if (h.address) {
    entry = h.address->v6 ? fmt::format("[{}]:{}", address_text(*h.address), port)
                          : fmt::format("{}:{}", address_text(*h.address), port);
  } else {
    entry = fmt::format("{}:{}", h.name, port);
  }
  return fmt::format("allow_add = [{}]", toml_string(entry, /*escape_dollar=*/false));
}

}  // namespace brig::policy
