#include "server/exec/utf8_repair.h"

namespace brig::exec {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

unsigned char byte_at(std::string_view s, std::size_t i) {
  return static_cast<unsigned char>(s[i]);
}

// The length the sequence led by c must have, and the bounds of its second
// byte (RFC 3629's table); 0 when c cannot start a sequence.
struct Lead {
  std::size_t length = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xbf;
};

Lead lead_of(unsigned char c) {
  if (c < 0x80) return {1, 0, 0};
  if (c >= 0xc2 && c <= 0xdf) return {2, 0x80, 0xbf};
  if (c >= 0xe0 && c <= 0xef) {
    return {3, static_cast<unsigned char>(c == 0xe0 ? 0xa0 : 0x80),
            static_cast<unsigned char>(c == 0xed ? 0x9f : 0xbf)};
  }
  if (c >= 0xf0 && c <= 0xf4) {
    return {4, static_cast<unsigned char>(c == 0xf0 ? 0x90 : 0x80),
            static_cast<unsigned char>(c == 0xf4 ? 0x8f : 0xbf)};
  }
  return {};
}

// How many bytes from i form a valid prefix of a sequence (1 when only the
// lead is valid), and whether that prefix is the whole sequence.
struct Scan {
  std::size_t valid = 0;
  bool complete = false;
};

Scan scan(std::string_view s, std::size_t i) {
  const Lead lead = lead_of(byte_at(s, i));
  if (lead.length == 0) return {0, false};
  if (lead.length == 1) return {1, true};
  std::size_t k = 1;
  for (; k < lead.length && i + k < s.size(); ++k) {
    const unsigned char b = byte_at(s, i + k);
    const unsigned char lo = k == 1 ? lead.lo : 0x80;
    const unsigned char hi = k == 1 ? lead.hi : 0xbf;
    if (b < lo || b > hi) return {k, false};
  }
  return {k, k == lead.length};
}

}  // namespace

std::string repair_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    if (byte_at(bytes, i) < 0x80) {
      out.push_back(bytes[i++]);
      continue;
    }
    const Scan s = scan(bytes, i);
    if (s.complete) {
      out.append(bytes.substr(i, s.valid));
      i += s.valid;
    } else {
      out.append(kReplacement);
      i += s.valid == 0 ? 1 : s.valid;
    }
  }
  return out;
}

std::size_t complete_prefix_length(std::string_view bytes) {
  // Only the last three bytes can begin an incomplete sequence.
  const std::size_t from = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (std::size_t i = from; i < bytes.size(); ++i) {
    if ((byte_at(bytes, i) & 0xc0) == 0x80) continue;  // inside some sequence
    const Scan s = scan(bytes, i);
    if (!s.complete && s.valid > 0 && i + s.valid == bytes.size()) return i;
  }
  return bytes.size();
}

std::size_t leading_continuation_bytes(std::string_view bytes) {
  std::size_t n = 0;
  while (n < 3 && n < bytes.size() && (byte_at(bytes, n) & 0xc0) == 0x80) ++n;
  return n;
}

}  // namespace brig::exec
