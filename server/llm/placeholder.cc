#include "server/llm/placeholder.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstdint>

namespace brig::llm {

Result<std::string> new_placeholder() {
  std::array<std::uint8_t, 16> bytes{};
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(sys_error("make an LLM placeholder", "getrandom", errno));
    got += static_cast<std::size_t>(n);
  }
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (std::uint8_t b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool same_placeholder(std::string_view offered, std::string_view issued) {
  if (offered.size() != issued.size() || issued.empty()) return false;
  // Every byte is looked at, whatever differs first; volatile keeps the
  // compiler from ending the loop early.
  volatile std::uint8_t diff = 0;
  for (std::size_t i = 0; i < issued.size(); ++i)
    diff = diff | static_cast<std::uint8_t>(offered[i] ^ issued[i]);
  return diff == 0;
}

}  // namespace brig::llm
