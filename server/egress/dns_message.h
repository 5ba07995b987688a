// The DNS messages the jail's DNS stub reads and writes (RFC 1035), pure:
// one question in, an answer of A/AAAA records, REFUSED or FORMERR out.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "server/policy/net_rules.h"

namespace brig::egress {

inline constexpr std::uint16_t kTypeA = 1;
inline constexpr std::uint16_t kTypeAAAA = 28;
inline constexpr std::uint16_t kClassIN = 1;

enum class Rcode : std::uint8_t {
  noerror = 0,
  formerr = 1,
  servfail = 2,
  nxdomain = 3,
  refused = 5
};

struct DnsQuery {
  std::uint16_t id = 0;
  bool recursion_desired = false;
  std::string name;  // lower-case, dots between labels, no trailing dot ("" = the root)
  // `name` in the case the client sent it, which the response echoes: a
  // resolver that randomises the case of its queries (0x20) drops an answer
  // whose question comes back in other case. Empty: `name` is echoed.
  std::string name_as_sent;
  std::uint16_t type = 0;
  std::uint16_t klass = 0;
};

// A standard query (QR 0, opcode 0) with exactly one question, no
// compression pointers in it, labels <= 63 bytes, name <= 255 bytes;
// answer/authority counts 0 (an OPT record in additional is allowed and
// ignored). Fails with why otherwise (answer FORMERR).
Result<DnsQuery> parse_dns_query(std::span<const std::uint8_t> message);

// The response: the question echoed, `addresses` of the asked type as
// answers (A takes the IPv4 ones, AAAA the IPv6 ones, other types none),
// `ttl` seconds; RA set, AA not.
std::vector<std::uint8_t> dns_response(const DnsQuery& query, Rcode rcode,
                                       std::span<const policy::Address> addresses,
                                       std::uint32_t ttl);

// FORMERR (or another rcode) for a message that did not parse: the id of
// `message` when it has one (12+ bytes), no question. nullopt when the
// message is too short to carry an id, or is itself a response (QR set:
// answering responses lets two stubs answer each other forever): drop it.
std::optional<std::vector<std::uint8_t>> dns_error(std::span<const std::uint8_t> message,
                                                   Rcode rcode);

}  // namespace brig::egress
