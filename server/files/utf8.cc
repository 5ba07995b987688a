#include "server/files/utf8.h"

#include <cstdint>
#include <cstring>

namespace brig::files {
namespace {

// True when the eight bytes at p are all ASCII.
bool ascii8(const char* p) {
  std::uint64_t word;
  std::memcpy(&word, p, 8);
  return (word & 0x8080808080808080u) == 0;
}

// Length of the valid sequence starting at s[i], or 0 when it is invalid.
std::size_t valid_sequence_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // bounds of the second byte (RFC 3629 table)
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  }
  return len;
}

}  // namespace

std::size_t count_invalid_utf8(std::string_view text) {
  std::size_t invalid = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    // ASCII, eight bytes at a time: most text is nothing else.
    while (text.size() - i >= 8 && ascii8(text.data() + i)) i += 8;
    if (i == text.size()) break;
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = valid_sequence_length(text, i);
    if (len == 0) {
      ++invalid;
      ++i;
      // A truncated sequence is one error, not one per byte.
      while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80) ++i;
    } else {
      i += len;
    }
  }
  return invalid;
}

std::size_t utf8_prefix_length(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  std::size_t cut = max_bytes;
  // Back up over continuation bytes (at most three) to the start of the
  // sequence that the cut would split.
  std::size_t back = 0;
  while (cut > 0 && back < 3 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) {
    --cut;
    ++back;
  }
  return cut;
}

}  // namespace brig::files
