// Where a scan of a JSON string's bytes, eight at a time, must stop: shared
// by the encoder (json_encode.cc) and the request reader (request_scan.cc).
#pragma once

#include <cstdint>

namespace brig::protocol {

// Bit 7 of a byte of the result is set where that byte of w is a quote, a
// backslash, a control character (< 0x20) or not ASCII (>= 0x80). The
// subtractions can borrow, so bytes above the lowest flagged one may be
// flagged falsely; the lowest flagged byte is always right, and it is the
// only one a caller may use.
constexpr std::uint64_t string_stops(std::uint64_t w) {
  constexpr std::uint64_t ones = 0x0101010101010101u;
  constexpr std::uint64_t highs = 0x8080808080808080u;
  const std::uint64_t quote = w ^ (ones * '"');
  const std::uint64_t backslash = w ^ (ones * '\\');
  const std::uint64_t control = (w - ones * 0x20) & ~w;
  const std::uint64_t is_quote = (quote - ones) & ~quote;
  const std::uint64_t is_backslash = (backslash - ones) & ~backslash;
  return (control | is_quote | is_backslash | w) & highs;
}

}  // namespace brig::protocol
