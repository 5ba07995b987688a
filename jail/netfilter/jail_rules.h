// The jail's own nftables table, `inet brig`, as one nf_tables netlink
// batch: built by the launcher before the clone and sent by the network
// helper right after it makes the namespace (net.h), so a filtered jail's
// rules cost no program, no library and no parse: one sendmsg and its acks.
//
// The table: the output chain drops everything but loopback, replies, and
// TCP or UDP to an `allow` entry that is not in `deny` (refused at once:
// a TCP reset, else an ICMP admin-prohibited); the input chain takes only
// loopback and replies. IPv6 and every protocol but TCP and UDP are refused.
// `nft list table inet brig` in the jail's namespace shows it as text
// (tests/jail/netfilter/jail_rules_test.cc holds that text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "jail/spec.h"

namespace brig::jail::netfilter {

// One element of the `allow` or `deny` set: addresses and ports, both
// first to last. The kernel refuses an element whose first or last point
// lies in another one (EEXIST), so entries that overlap (a name pinned
// inside an allowed network, say) are cut apart: the elements match
// exactly the packets the entries match, and none overlaps another.
struct SetElement {
  std::uint32_t first_address, last_address;
  std::uint16_t first_port, last_port;
  friend bool operator==(const SetElement&, const SetElement&) = default;
};
std::vector<SetElement> set_elements(const std::vector<NetFilter::Entry>& entries);

// The batch: BATCH_BEGIN, the table, its sets and their elements, chains,
// rules, BATCH_END; every message but the two ends asks for an ack.
std::vector<char> jail_rules_batch(const NetFilter& filter);

// Sends `batch` on a new NETLINK_NETFILTER socket of the caller's network
// namespace and reads an answer for each message. 0, or the errno of the
// first message the kernel refused. Async-signal-safe: the network helper
// runs it in a raw clone.
int load_batch(const char* batch, std::size_t size);

}  // namespace brig::jail::netfilter
