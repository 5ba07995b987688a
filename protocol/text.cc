#include "protocol/text.h"

namespace brig::protocol {

std::string clip(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  constexpr std::string_view kEllipsis = "...";
  std::size_t keep = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  // Back up over continuation bytes (10xxxxxx) to the start of a sequence.
  while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;
  std::string out(s.substr(0, keep));
  out += kEllipsis;
  return out;
}

}  // namespace brig::protocol
