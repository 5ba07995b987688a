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

// Whether the valid 3-byte sequence at s[i] is in U+F780..U+F7FF: EF 9E xx
// (U+F780..U+F7BF) or EF 9F xx (U+F7C0..U+F7FF).
bool reserved_at(std::string_view s, std::size_t i) {
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  return static_cast<unsigned char>(s[i]) == 0xef && (b1 == 0x9e || b1 == 0x9f);
}

// U+F700 + byte (0x80..0xFF) in UTF-8: EF, 9E or 9F, 80 + the low six bits.
void append_escape(std::string& out, unsigned char byte) {
  out += static_cast<char>(0xef);
  out += static_cast<char>(byte < 0xc0 ? 0x9e : 0x9f);
  out += static_cast<char>(0x80 | (byte & 0x3f));
}

}  // namespace

std::string name_to_text(std::string_view name) {
  std::string out;
  std::size_t i = 0;
  while (i < name.size()) {
    // Runs of plain characters are copied whole.
    const std::size_t start = i;
    std::size_t len = 0;
    while (i < name.size()) {
      if (name.size() - i >= 8 && ascii8(name.data() + i)) {
        i += 8;
        continue;
      }
      len = valid_sequence_length(name, i);
      if (len == 0 || (len == 3 && reserved_at(name, i))) break;
      i += len;
    }
    if (start == 0 && i == name.size()) return std::string(name);
    if (out.empty()) out.reserve(name.size() + 16);
    out.append(name, start, i - start);
    if (i == name.size()) break;
    // An invalid byte is escaped alone (the bytes after it are looked at
    // afresh); a reserved character byte by byte.
    const std::size_t n = len == 0 ? 1 : len;
    for (std::size_t k = 0; k < n; ++k) append_escape(out, static_cast<unsigned char>(name[i + k]));
    i += n;
  }
  return out;
}

std::optional<std::string> text_to_name(std::string_view text) {
  std::string out;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size();) {
    if (text.size() - i >= 3 && static_cast<unsigned char>(text[i]) == 0xef &&
        (static_cast<unsigned char>(text[i + 1]) == 0x9e ||
         static_cast<unsigned char>(text[i + 1]) == 0x9f) &&
        (static_cast<unsigned char>(text[i + 2]) & 0xc0) == 0x80) {
      if (!escaped) {
        out.reserve(text.size());
        out.assign(text.substr(0, i));
        escaped = true;
      }
      const unsigned char b2 = static_cast<unsigned char>(text[i + 2]);
      out +=
          static_cast<char>((text[i + 1] == static_cast<char>(0x9e) ? 0x80 : 0xc0) | (b2 & 0x3f));
      i += 3;
      continue;
    }
    if (escaped) out += text[i];
    ++i;
  }
  if (!escaped) return std::string(text);
  // Only the spelling name_to_text gives is accepted.
  if (name_to_text(out) != text) return std::nullopt;
  return out;
}

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
