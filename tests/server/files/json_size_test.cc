// json_string_cost: eight bytes at a time where they are plain, byte by byte
// elsewhere; the sum must be json_byte_cost's, byte for byte, whatever the
// bytes and wherever they fall in a word.
#include "server/files/json_size.h"

#include <cstddef>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace brig::files {
namespace {

std::size_t cost_byte_by_byte(const std::string& s) {
  std::size_t cost = 2;
  for (const char c : s) cost += json_byte_cost(static_cast<unsigned char>(c));
  return cost;
}

TEST(JsonStringCost, EveryByteValueAtEveryPlaceOfAWord) {
  for (int value = 0; value < 256; ++value) {
    for (std::size_t at = 0; at < 24; ++at) {
      std::string s(24, 'a');
      s[at] = static_cast<char>(value);
      ASSERT_EQ(json_string_cost(s), cost_byte_by_byte(s)) << "byte " << value << " at " << at;
    }
  }
}

TEST(JsonStringCost, BytesNextToTheLimitsOfPlain) {
  // Below and above each bound a borrow or a carry could blur: 0x1f/0x20,
  // '"' (0x22) and its neighbours, '\\' (0x5c), 0x7f/0x80, and a zero byte.
  const std::string edges =
      std::string("\x1f\x20\x21\x22\x23\x5b\x5c\x5d\x7e\x7f\x80\xff", 12) + std::string(1, '\0');
  for (const char a : edges)
    for (const char b : edges) {
      std::string s = "abcdefgh" + std::string(1, a) + std::string(1, b) + "ijklmn";
      ASSERT_EQ(json_string_cost(s), cost_byte_by_byte(s));
      s = std::string(1, a) + std::string(7, 'x') + std::string(1, b);
      ASSERT_EQ(json_string_cost(s), cost_byte_by_byte(s));
    }
}

TEST(JsonStringCost, RandomTextOfEveryShortLength) {
  std::mt19937 rng(16);
  for (std::size_t length = 0; length < 200; ++length) {
    for (int round = 0; round < 20; ++round) {
      std::string s(length, '\0');
      // Mostly plain text with the odd escape, as files are; and all bytes.
      for (char& c : s)
        c = static_cast<char>(round % 2 ? rng() % 256
                                        : (rng() % 50 ? 0x20 + rng() % 95 : rng() % 256));
      ASSERT_EQ(json_string_cost(s), cost_byte_by_byte(s)) << "length " << length;
    }
  }
}

}  // namespace
}  // namespace brig::files
