#include "server/files/json_size.h"

#include <array>
#include <cstdint>
#include <cstring>

namespace brig::files {

namespace {

constexpr std::uint64_t kOnes = 0x0101010101010101u;
constexpr std::uint64_t kHighs = 0x8080808080808080u;

// Whether a byte of `w` is below `n` (n <= 128; bytes of `w` below 0x80):
// exact as a whole, though a borrow may mark more bytes than those.
constexpr bool has_byte_below(std::uint64_t w, std::uint64_t n) {
  return ((w - kOnes * n) & ~w & kHighs) != 0;
}

// Whether all eight bytes of `w` cost one byte each: printable ASCII other
// than '"' and '\\'.
constexpr bool all_plain(std::uint64_t w) {
  return (w & kHighs) == 0 && !has_byte_below(w, 0x20) && !has_byte_below(w ^ (kOnes * '"'), 1) &&
         !has_byte_below(w ^ (kOnes * '\\'), 1);
}

// json_byte_cost of every byte, looked up: the bytes of a word that is not
// all plain (a tab, a quote) without a branch each.
constexpr std::array<std::uint8_t, 256> kCost = [] {
  std::array<std::uint8_t, 256> cost{};
  for (std::size_t c = 0; c < cost.size(); ++c)
    cost[c] = static_cast<std::uint8_t>(json_byte_cost(static_cast<unsigned char>(c)));
  return cost;
}();

}  // namespace

std::size_t json_string_cost(std::string_view text) {
  // Eight bytes at a time while they are plain: a file read whole is mostly
  // plain text, and one branch per byte was most of the cost of reading it.
  std::size_t cost = 2;
  std::size_t i = 0;
  for (; text.size() - i >= 8; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, text.data() + i, 8);
    if (all_plain(w)) {
      cost += 8;
      continue;
    }
    for (std::size_t k = i; k < i + 8; ++k) cost += kCost[static_cast<unsigned char>(text[k])];
  }
  for (; i < text.size(); ++i) cost += kCost[static_cast<unsigned char>(text[i])];
  return cost;
}

}  // namespace brig::files
