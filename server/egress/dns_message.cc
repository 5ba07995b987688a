// DNS messages by hand: RFC 1035's wire format for one question is a few
// dozen lines, and the stub must refuse more than a general DNS library
// accepts (compression in the question, a second question, records in the
// answer sections of a query), so c-ares' parser would only be a second
// layer to check against.
#include "server/egress/dns_message.h"

#include <fmt/format.h>

#include "jail/base/ascii.h"

namespace brig::egress {
namespace {

constexpr std::uint16_t kTypeOpt = 41;
constexpr std::size_t kHeaderSize = 12;
constexpr std::size_t kMaxName = 255;  // RFC 1035 2.3.4: the name's wire form
constexpr std::uint16_t kFlagQr = 0x8000;
constexpr std::uint16_t kFlagRd = 0x0100;
constexpr std::uint16_t kFlagRa = 0x0080;
constexpr std::uint16_t kOpcodeMask = 0x7800;

std::unexpected<Error> refused(std::string why) {
  return std::unexpected(Error{"parse DNS query", "", std::move(why)});
}

// Reads big-endian fields; every read says whether the bytes were there.
struct Reader {
  std::span<const std::uint8_t> bytes;
  std::size_t pos = 0;

  bool has(std::size_t n) const { return bytes.size() - pos >= n; }
  bool u8(std::uint8_t& v) {
    if (!has(1)) return false;
    v = bytes[pos++];
    return true;
  }
  bool u16(std::uint16_t& v) {
    if (!has(2)) return false;
    v = static_cast<std::uint16_t>(bytes[pos] << 8 | bytes[pos + 1]);
    pos += 2;
    return true;
  }
  bool skip(std::size_t n) {
    if (!has(n)) return false;
    pos += n;
    return true;
  }
};

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v));
}

// A name as labels; the text of a parsed name has no '.' inside a label, so
// splitting at dots gives back the labels it was read from.
void put_name(std::vector<std::uint8_t>& out, std::string_view name) {
  while (!name.empty()) {
    const std::size_t dot = name.find('.');
    const std::string_view label = name.substr(0, dot);
    out.push_back(static_cast<std::uint8_t>(label.size()));
    out.insert(out.end(), label.begin(), label.end());
    if (dot == std::string_view::npos) break;
    name.remove_prefix(dot + 1);
  }
  out.push_back(0);
}

}  // namespace

Result<DnsQuery> parse_dns_query(std::span<const std::uint8_t> message) {
  Reader r{message};
  DnsQuery q;
  std::uint16_t flags = 0, qdcount = 0, ancount = 0, nscount = 0, arcount = 0;
  if (!r.u16(q.id) || !r.u16(flags) || !r.u16(qdcount) || !r.u16(ancount) || !r.u16(nscount) ||
      !r.u16(arcount)) {
    return refused(fmt::format("{} bytes, shorter than a DNS header", message.size()));
  }
  if ((flags & kFlagQr) != 0) return refused("a response (QR 1), not a query");
  if (const int opcode = (flags & kOpcodeMask) >> 11; opcode != 0) {
    return refused(fmt::format("opcode {}: only standard queries (0)", opcode));
  }
  if (qdcount != 1) return refused(fmt::format("{} questions: exactly one is answered", qdcount));
  if (ancount != 0 || nscount != 0) {
    return refused(
        fmt::format("a query with {} answer and {} authority records", ancount, nscount));
  }
  q.recursion_desired = (flags & kFlagRd) != 0;

  std::size_t wire_size = 1;  // the root's zero byte
  for (;;) {
    std::uint8_t length = 0;
    if (!r.u8(length)) return refused("the question's name is cut off");
    if (length == 0) break;
    // Refusing every pointer here also refuses every pointer loop, without
    // following one.
    if ((length & 0xC0) == 0xC0) return refused("a compression pointer in the question");
    if ((length & 0xC0) != 0) {
      return refused(fmt::format("label type 0x{:02x}: only plain labels", length & 0xC0));
    }
    wire_size += 1 + length;
    if (wire_size > kMaxName) return refused("the question's name is longer than 255 bytes");
    if (!r.has(length)) return refused("the question's name is cut off");
    const auto label = message.subspan(r.pos, length);
    r.pos += length;
    if (!q.name_as_sent.empty()) q.name_as_sent += '.';
    for (std::uint8_t b : label) {
      // As text, a '.' would split the label in two and a NUL would end the
      // name early: neither comes back as the name that was asked.
      if (b == '.' || b == 0) return refused("a label holding a '.' or NUL byte");
      q.name_as_sent += static_cast<char>(b);
    }
  }
  if (!r.u16(q.type) || !r.u16(q.klass))
    return refused("the question's type and class are cut off");
  q.name = ascii_lowered(q.name_as_sent);

  bool seen_opt = false;
  for (std::uint16_t i = 0; i < arcount; ++i) {
    std::uint8_t owner = 0;
    std::uint16_t type = 0, rdlength = 0;
    if (!r.u8(owner) || !r.u16(type)) return refused("an additional record is cut off");
    // OPT's owner is the root (RFC 6891 6.1.2); any other record does not
    // belong in a stub's query.
    if (owner != 0 || type != kTypeOpt) {
      return refused("an additional record other than EDNS OPT");
    }
    if (seen_opt) return refused("more than one EDNS OPT record");
    seen_opt = true;
    // Its class (the client's UDP size), version, flags and options change
    // nothing a stub of a few addresses per answer sends back.
    if (!r.skip(2 + 4) || !r.u16(rdlength) || !r.skip(rdlength)) {
      return refused("the EDNS OPT record is cut off");
    }
  }
  if (r.pos != message.size()) {
    return refused(fmt::format("{} bytes after the query", message.size() - r.pos));
  }
  return q;
}

std::vector<std::uint8_t> dns_response(const DnsQuery& query, Rcode rcode,
                                       std::span<const policy::Address> addresses,
                                       std::uint32_t ttl) {
  std::vector<std::uint8_t> out;
  const bool as_sent =
      !query.name_as_sent.empty() && ascii_lowered(query.name_as_sent) == query.name;
  // Answers only for a success of class IN: the addresses are IN's, and a
  // REFUSED or NXDOMAIN with answers would contradict itself.
  const bool answer = rcode == Rcode::noerror && query.klass == kClassIN &&
                      (query.type == kTypeA || query.type == kTypeAAAA);
  const bool v6 = query.type == kTypeAAAA;
  std::uint16_t count = 0;
  if (answer) {
    for (const policy::Address& a : addresses) {
      if (a.v6 == v6 && count < 0xFFFF) ++count;
    }
  }

  put16(out, query.id);
  put16(out, static_cast<std::uint16_t>(kFlagQr | (query.recursion_desired ? kFlagRd : 0) |
                                        kFlagRa | static_cast<std::uint16_t>(rcode)));
  put16(out, 1);
  put16(out, count);
  put16(out, 0);
  put16(out, 0);
  put_name(out, as_sent ? query.name_as_sent : query.name);
  put16(out, query.type);
  put16(out, query.klass);

  std::uint16_t written = 0;
  for (const policy::Address& a : addresses) {
    if (written == count) break;
    if (a.v6 != v6) continue;
    ++written;
    // The owner is the question's name, at offset 12 right after the header.
    put16(out, 0xC000 | kHeaderSize);
    put16(out, query.type);
    put16(out, kClassIN);
    put32(out, ttl);
    const std::size_t size = v6 ? 16 : 4;
    put16(out, static_cast<std::uint16_t>(size));
    out.insert(out.end(), a.bytes.begin(), a.bytes.begin() + static_cast<std::ptrdiff_t>(size));
  }
  return out;
}

std::optional<std::vector<std::uint8_t>> dns_error(std::span<const std::uint8_t> message,
                                                   Rcode rcode) {
  if (message.size() < kHeaderSize) return std::nullopt;
  const auto flags = static_cast<std::uint16_t>(message[2] << 8 | message[3]);
  if ((flags & kFlagQr) != 0) return std::nullopt;
  std::vector<std::uint8_t> out{message[0], message[1]};
  put16(out, static_cast<std::uint16_t>(kFlagQr | (flags & (kOpcodeMask | kFlagRd)) | kFlagRa |
                                        static_cast<std::uint16_t>(rcode)));
  for (int i = 0; i < 4; ++i) put16(out, 0);
  return out;
}

}  // namespace brig::egress
