#include "jail/netfilter/jail_rules.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>

namespace brig::jail::netfilter {
namespace {

// nft's type numbers, so that `nft list` names the sets' key types.
constexpr std::uint32_t kTypeIpv4Addr = 7;
constexpr std::uint32_t kTypeInetService = 13;
constexpr std::uint32_t kTypeBits = 6;

constexpr std::uint32_t kDenySetId = 1;
constexpr std::uint32_t kAllowSetId = 2;
// A NEWSETELEM message's element list is one attribute, whose length is
// 16 bits: elements go in messages of this many.
constexpr std::size_t kElementsPerMessage = 1000;

constexpr std::uint8_t kTcp = 6, kUdp = 17;

// The messages of one batch, each built attribute by attribute; nests'
// and messages' lengths are patched when they close.
class Batch {
 public:
  void begin_message(std::uint16_t type, std::uint16_t flags, std::uint8_t family,
                     std::uint16_t res_id = 0) {
    message_ = buf_.size();
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = static_cast<std::uint16_t>(NLM_F_REQUEST | flags);
    h.nlmsg_seq = ++seq_;
    append(&h, sizeof h);
    nfgenmsg g{};
    g.nfgen_family = family;
    g.version = NFNETLINK_V0;
    g.res_id = htons(res_id);
    append(&g, sizeof g);
  }
  void end_message() {
    const auto len = static_cast<std::uint32_t>(buf_.size() - message_);
    std::memcpy(buf_.data() + message_, &len, sizeof len);
  }
  // An nf_tables object message (asks for an ack).
  void begin_object(int msg, std::uint16_t flags) {
    begin_message(static_cast<std::uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | msg),
                  static_cast<std::uint16_t>(NLM_F_ACK | flags), NFPROTO_INET);
  }

  void attr(std::uint16_t type, const void* data, std::size_t size) {
    nlattr a{};
    a.nla_type = type;
    a.nla_len = static_cast<std::uint16_t>(NLA_HDRLEN + size);
    append(&a, sizeof a);
    if (size > 0) append(data, size);
  }
  void str(std::uint16_t type, const char* s) { attr(type, s, std::strlen(s) + 1); }
  void be32(std::uint16_t type, std::uint32_t v) {
    const std::uint32_t be = htonl(v);
    attr(type, &be, sizeof be);
  }
  void u8(std::uint16_t type, std::uint8_t v) { attr(type, &v, 1); }
  std::size_t open(std::uint16_t type) {
    const std::size_t at = buf_.size();
    attr(static_cast<std::uint16_t>(type | NLA_F_NESTED), nullptr, 0);
    return at;
  }
  void close(std::size_t at) {
    const auto len = static_cast<std::uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at, &len, sizeof len);
  }
  std::vector<char> take() { return std::move(buf_); }

 private:
  void append(const void* data, std::size_t size) {
    const std::size_t at = buf_.size();
    buf_.resize(NLA_ALIGN(at + size));  // the padding zeroed
    if (size > 0) std::memcpy(buf_.data() + at, data, size);
  }
  std::vector<char> buf_;
  std::size_t message_ = 0;
  std::uint32_t seq_ = 0;
};

// The expressions of one rule, inside its NFTA_RULE_EXPRESSIONS.
class Rule {
 public:
  Rule(Batch& b, const char* chain) : b_(b) {
    b_.begin_object(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND);
    b_.str(NFTA_RULE_TABLE, "brig");
    b_.str(NFTA_RULE_CHAIN, chain);
    list_ = b_.open(NFTA_RULE_EXPRESSIONS);
  }
  ~Rule() {
    b_.close(list_);
    b_.end_message();
  }
  Rule(const Rule&) = delete;
  Rule& operator=(const Rule&) = delete;

  Rule& meta(std::uint32_t key, std::uint32_t reg = NFT_REG_1) {
    expr("meta", [&] {
      b_.be32(NFTA_META_DREG, reg);
      b_.be32(NFTA_META_KEY, key);
    });
    return *this;
  }
  Rule& cmp(std::uint32_t op, const void* data, std::size_t size) {
    expr("cmp", [&] {
      b_.be32(NFTA_CMP_SREG, NFT_REG_1);
      b_.be32(NFTA_CMP_OP, op);
      const std::size_t d = b_.open(NFTA_CMP_DATA);
      b_.attr(NFTA_DATA_VALUE, data, size);
      b_.close(d);
    });
    return *this;
  }
  Rule& byte_is(std::uint8_t v) { return cmp(NFT_CMP_EQ, &v, 1); }
  Rule& ifname_is(const char* name) {
    char padded[16] = {};
    std::strncpy(padded, name, sizeof padded - 1);
    return cmp(NFT_CMP_EQ, padded, sizeof padded);
  }
  // ct state established,related
  Rule& ct_replies() {
    expr("ct", [&] {
      b_.be32(NFTA_CT_DREG, NFT_REG_1);
      b_.be32(NFTA_CT_KEY, NFT_CT_STATE);
    });
    expr("bitwise", [&] {
      b_.be32(NFTA_BITWISE_SREG, NFT_REG_1);
      b_.be32(NFTA_BITWISE_DREG, NFT_REG_1);
      b_.be32(NFTA_BITWISE_LEN, 4);
      const std::uint32_t mask =
          NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED);
      const std::uint32_t zero = 0;
      std::size_t d = b_.open(NFTA_BITWISE_MASK);
      b_.attr(NFTA_DATA_VALUE, &mask, sizeof mask);
      b_.close(d);
      d = b_.open(NFTA_BITWISE_XOR);
      b_.attr(NFTA_DATA_VALUE, &zero, sizeof zero);
      b_.close(d);
    });
    const std::uint32_t zero = 0;
    return cmp(NFT_CMP_NEQ, &zero, sizeof zero);
  }
  Rule& payload(std::uint32_t base, std::uint32_t offset, std::uint32_t len, std::uint32_t reg) {
    expr("payload", [&] {
      b_.be32(NFTA_PAYLOAD_DREG, reg);
      b_.be32(NFTA_PAYLOAD_BASE, base);
      b_.be32(NFTA_PAYLOAD_OFFSET, offset);
      b_.be32(NFTA_PAYLOAD_LEN, len);
    });
    return *this;
  }
  // ip daddr . th dport @set
  Rule& destination_in(const char* set, std::uint32_t set_id) {
    payload(NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG32_00);
    payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG32_01);
    expr("lookup", [&] {
      b_.be32(NFTA_LOOKUP_SREG, NFT_REG32_00);
      b_.str(NFTA_LOOKUP_SET, set);
      b_.be32(NFTA_LOOKUP_SET_ID, set_id);
    });
    return *this;
  }
  Rule& verdict(int code, const char* chain = nullptr) {
    expr("immediate", [&] {
      b_.be32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
      const std::size_t d = b_.open(NFTA_IMMEDIATE_DATA);
      const std::size_t v = b_.open(NFTA_DATA_VERDICT);
      b_.be32(NFTA_VERDICT_CODE, static_cast<std::uint32_t>(code));
      if (chain) b_.str(NFTA_VERDICT_CHAIN, chain);
      b_.close(v);
      b_.close(d);
    });
    return *this;
  }
  Rule& reject(std::uint32_t type, std::uint8_t code = 0) {
    expr("reject", [&] {
      b_.be32(NFTA_REJECT_TYPE, type);
      b_.u8(NFTA_REJECT_ICMP_CODE, code);
    });
    return *this;
  }

 private:
  template <class F>
  void expr(const char* name, F&& data) {
    const std::size_t e = b_.open(NFTA_LIST_ELEM);
    b_.str(NFTA_EXPR_NAME, name);
    const std::size_t d = b_.open(NFTA_EXPR_DATA);
    data();
    b_.close(d);
    b_.close(e);
  }
  Batch& b_;
  std::size_t list_;
};

// An element's key: the address, then the port padded to a 32-bit register.
void put_key(Batch& b, std::uint16_t type, std::uint32_t address, std::uint16_t port) {
  char key[8] = {};
  const std::uint32_t a = htonl(address);
  const std::uint16_t p = htons(port);
  std::memcpy(key, &a, 4);
  std::memcpy(key + 4, &p, 2);
  const std::size_t k = b.open(type);
  b.attr(NFTA_DATA_VALUE, key, sizeof key);
  b.close(k);
}

// An interval set of address . port (the kernel's pipapo set type).
void add_set(Batch& b, const char* name, std::uint32_t id,
             const std::vector<NetFilter::Entry>& entries) {
  b.begin_object(NFT_MSG_NEWSET, NLM_F_CREATE);
  b.str(NFTA_SET_TABLE, "brig");
  b.str(NFTA_SET_NAME, name);
  b.be32(NFTA_SET_FLAGS, NFT_SET_INTERVAL | NFT_SET_CONCAT);
  b.be32(NFTA_SET_KEY_TYPE, (kTypeIpv4Addr << kTypeBits) | kTypeInetService);
  b.be32(NFTA_SET_KEY_LEN, 8);
  b.be32(NFTA_SET_ID, id);
  const std::size_t desc = b.open(NFTA_SET_DESC);
  const std::size_t concat = b.open(NFTA_SET_DESC_CONCAT);
  for (const std::uint32_t len : {4u, 2u}) {
    const std::size_t field = b.open(NFTA_LIST_ELEM);
    b.be32(NFTA_SET_FIELD_LEN, len);
    b.close(field);
  }
  b.close(concat);
  b.close(desc);
  b.end_message();

  const std::vector<SetElement> elements = set_elements(entries);
  for (std::size_t at = 0; at < elements.size(); at += kElementsPerMessage) {
    b.begin_object(NFT_MSG_NEWSETELEM, NLM_F_CREATE);
    b.str(NFTA_SET_ELEM_LIST_TABLE, "brig");
    b.str(NFTA_SET_ELEM_LIST_SET, name);
    b.be32(NFTA_SET_ELEM_LIST_SET_ID, id);
    const std::size_t list = b.open(NFTA_SET_ELEM_LIST_ELEMENTS);
    const std::size_t end = std::min(elements.size(), at + kElementsPerMessage);
    for (std::size_t i = at; i < end; ++i) {
      const SetElement& e = elements[i];
      const std::size_t element = b.open(NFTA_LIST_ELEM);
      put_key(b, NFTA_SET_ELEM_KEY, e.first_address, e.first_port);
      put_key(b, NFTA_SET_ELEM_KEY_END, e.last_address, e.last_port);
      b.close(element);
    }
    b.close(list);
    b.end_message();
  }
}

void add_chain(Batch& b, const char* name, int hook) {
  b.begin_object(NFT_MSG_NEWCHAIN, NLM_F_CREATE);
  b.str(NFTA_CHAIN_TABLE, "brig");
  b.str(NFTA_CHAIN_NAME, name);
  if (hook >= 0) {
    const std::size_t h = b.open(NFTA_CHAIN_HOOK);
    b.be32(NFTA_HOOK_HOOKNUM, static_cast<std::uint32_t>(hook));
    b.be32(NFTA_HOOK_PRIORITY, 0);  // priority filter
    b.close(h);
    b.be32(NFTA_CHAIN_POLICY, NF_DROP);
    b.str(NFTA_CHAIN_TYPE, "filter");
  }
  b.end_message();
}

}  // namespace

std::vector<SetElement> set_elements(const std::vector<NetFilter::Entry>& entries) {
  auto mask = [](unsigned prefix) { return prefix == 0 ? 0u : 0xffffffffu << (32 - prefix); };
  auto key = [](unsigned prefix, std::uint32_t first) {
    return static_cast<std::uint64_t>(prefix) << 32 | first;
  };
  std::vector<std::uint32_t> firsts;
  firsts.reserve(entries.size());
  // Entries by network: what covers an entry's addresses is an entry with
  // one of the (at most 33) networks around them.
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> by_network;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::uint32_t a = 0;
    for (const std::uint8_t octet : entries[i].address) a = a << 8 | octet;
    const unsigned prefix = std::min<unsigned>(entries[i].prefix, 32);
    firsts.push_back(a & mask(prefix));
    by_network[key(prefix, firsts.back())].push_back(i);
  }
  std::vector<SetElement> out;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ports, cut;
  for (std::size_t j = 0; j < entries.size(); ++j) {
    const unsigned prefix_j = std::min<unsigned>(entries[j].prefix, 32);
    ports.assign(1, {entries[j].first_port, entries[j].last_port});
    for (unsigned p = 0; p <= prefix_j && !ports.empty(); ++p) {
      const auto around = by_network.find(key(p, firsts[j] & mask(p)));
      if (around == by_network.end()) continue;
      for (const std::size_t i : around->second) {
        // The same network covers from the earlier entry only.
        if (i == j || (p == prefix_j && i > j)) continue;
        const std::uint32_t lo = entries[i].first_port, hi = entries[i].last_port;
        cut.clear();
        for (const auto& [first, last] : ports) {
          if (last < lo || first > hi) {
            cut.emplace_back(first, last);
            continue;
          }
          if (first < lo) cut.emplace_back(first, lo - 1);
          if (last > hi) cut.emplace_back(hi + 1, last);
        }
        ports.swap(cut);
      }
    }
    for (const auto& [first, last] : ports)
      out.push_back({firsts[j], firsts[j] | ~mask(prefix_j), static_cast<std::uint16_t>(first),
                     static_cast<std::uint16_t>(last)});
  }
  return out;
}

std::vector<char> jail_rules_batch(const NetFilter& filter) {
  Batch b;
  b.begin_message(NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  b.end_message();
  b.begin_object(NFT_MSG_NEWTABLE, NLM_F_CREATE);
  b.str(NFTA_TABLE_NAME, "brig");
  b.end_message();
  add_set(b, "deny", kDenySetId, filter.deny);
  add_set(b, "allow", kAllowSetId, filter.allow);
  add_chain(b, "output", NF_INET_LOCAL_OUT);
  add_chain(b, "refuse", -1);
  add_chain(b, "input", NF_INET_LOCAL_IN);

  Rule(b, "output").meta(NFT_META_OIFNAME).ifname_is("lo").verdict(NF_ACCEPT);
  Rule(b, "output").ct_replies().verdict(NF_ACCEPT);
  // deny first: it wins over allow. One rule per protocol (no anonymous
  // set, which would be one more object in the transaction).
  struct Lookup {
    const char* set;
    std::uint32_t id;
    int verdict;
    const char* chain;
  };
  for (const Lookup& l : {Lookup{"deny", kDenySetId, NFT_GOTO, "refuse"},
                          Lookup{"allow", kAllowSetId, NF_ACCEPT, nullptr}})
    for (const std::uint8_t proto : {kTcp, kUdp})
      Rule(b, "output")
          .meta(NFT_META_NFPROTO)
          .byte_is(NFPROTO_IPV4)
          .meta(NFT_META_L4PROTO)
          .byte_is(proto)
          .destination_in(l.set, l.id)
          .verdict(l.verdict, l.chain);
  Rule(b, "output").verdict(NFT_GOTO, "refuse");
  // Refused with a reset (TCP) or an ICMP error (the rest), so that
  // connect() fails at once: a SYN merely dropped is sent again and again,
  // and the command would wait out its timeout to learn it is refused.
  Rule(b, "refuse").meta(NFT_META_L4PROTO).byte_is(kTcp).reject(NFT_REJECT_TCP_RST);
  Rule(b, "refuse").reject(NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
  Rule(b, "input").meta(NFT_META_IIFNAME).ifname_is("lo").verdict(NF_ACCEPT);
  Rule(b, "input").ct_replies().verdict(NF_ACCEPT);

  b.begin_message(NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  b.end_message();
  return b.take();
}

int load_batch(const char* batch, std::size_t size) {
  // The last message that asks for an ack: its ack means all are in. The
  // kernel aborts a batch without its END yet acks each message, so a
  // batch not whole is refused here.
  std::uint32_t last_seq = 0;
  std::uint16_t first_type = 0, last_type = 0;
  for (std::size_t at = 0; at < size;) {
    nlmsghdr h;
    if (size - at < sizeof h) return EINVAL;
    std::memcpy(&h, batch + at, sizeof h);
    if (h.nlmsg_len < sizeof h || h.nlmsg_len > size - at) return EINVAL;
    if (at == 0) first_type = h.nlmsg_type;
    last_type = h.nlmsg_type;
    if (h.nlmsg_flags & NLM_F_ACK) last_seq = h.nlmsg_seq;
    at += NLMSG_ALIGN(h.nlmsg_len);
  }
  if (first_type != NFNL_MSG_BATCH_BEGIN || last_type != NFNL_MSG_BATCH_END || last_seq == 0)
    return EINVAL;
  const int sock = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (sock < 0) return errno;
  // A batch is one datagram; thousands of set elements outgrow the default
  // send buffer. FORCE needs CAP_NET_ADMIN in the namespace's owner, which
  // the helper has; else the plain limit is what there is.
  const int want = static_cast<int>(size + 4096);
  if (::setsockopt(sock, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof want) != 0)
    ::setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
  const int one = 1;
  ::setsockopt(sock, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  int err = 0;
  if (::sendto(sock, batch, size, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
    err = errno;
  bool done = err != 0;
  alignas(nlmsghdr) char reply[8192];
  while (!done) {
    const ssize_t n = ::recv(sock, reply, sizeof reply, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EPROTO;
      break;
    }
    std::size_t left = static_cast<std::size_t>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(reply); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
      // A failed commit is answered first, for the batch as a whole.
      if (e->error != 0) {
        err = -e->error;
        done = true;
        break;
      }
      if (e->msg.nlmsg_seq == last_seq) done = true;
    }
  }
  ::close(sock);
  return err;
}

}  // namespace brig::jail::netfilter
