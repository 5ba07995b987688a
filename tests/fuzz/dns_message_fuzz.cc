// The DNS stub's parser (server/egress/dns_message.h): any datagram a jailed
// command sends. A query that parses gets a response, which must itself be
// a well-formed message carrying the same id and question; one that does
// not gets FORMERR or is dropped, never a reply to a reply.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "server/egress/dns_message.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace brig::egress;
  const std::span<const std::uint8_t> message(data, size);
  auto query = parse_dns_query(message);
  if (!query) {
    auto error = dns_error(message, Rcode::formerr);
    if (error) {
      if (size < 12 || (data[2] & 0x80) != 0) std::abort();  // no id, or a response
      if (error->size() < 12 || (*error)[0] != data[0] || (*error)[1] != data[1]) std::abort();
    }
    return 0;
  }
  if (query->name.size() > 255) std::abort();
  std::vector<brig::policy::Address> addresses(2);
  addresses[0].bytes = {10, 0, 0, 7};
  addresses[1].v6 = true;
  addresses[1].bytes[15] = 1;
  const auto response = dns_response(*query, Rcode::noerror, addresses, 60);
  if (response.size() < 12 || response[0] != data[0] || response[1] != data[1]) std::abort();
  if ((response[2] & 0x80) == 0) std::abort();  // QR: a response
  // The question must come back as it was sent.
  std::vector<std::uint8_t> as_query = response;
  as_query[2] &= 0x7f;            // back to a query
  as_query[6] = as_query[7] = 0;  // no answers
  as_query[8] = as_query[9] = as_query[10] = as_query[11] = 0;
  as_query[3] = 0;  // RA, rcode
  // Header and question only: the name's labels (a length byte each, dots
  // become those), the root's zero byte, type and class.
  as_query.resize(12 + (query->name.empty() ? 1 : query->name.size() + 2) + 4);
  auto again = parse_dns_query(std::span<const std::uint8_t>(as_query));
  if (!again || again->name != query->name || again->type != query->type ||
      again->klass != query->klass) {
    std::abort();
  }
  return 0;
}
