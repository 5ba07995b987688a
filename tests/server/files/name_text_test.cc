// The lossless escape of file names (server/files/utf8.h): every byte string
// round-trips, valid UTF-8 passes unchanged, and only one spelling of a name
// is accepted back.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/files/tool_path.h"
#include "server/files/utf8.h"

namespace brig::files {
namespace {

// U+F700 + byte in UTF-8.
std::string esc(unsigned char byte) {
  const char32_t cp = 0xf700 + byte;
  return {static_cast<char>(0xe0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3f)),
          static_cast<char>(0x80 | (cp & 0x3f))};
}

std::size_t ascii_count(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += static_cast<unsigned char>(c) < 0x80;
  return n;
}

TEST(NameText, ValidUtf8PassesUnchanged) {
  for (const std::string& s : std::vector<std::string>{
           "", "plain.txt", "dir/sub/file", "\xc3\xa9t\xc3\xa9", "\xe2\x82\xac \xf0\x9f\x98\x80",
           "\xef\x9d\xbf", "\xef\xa0\x80", std::string(1000, 'a') + "\xc3\xa9"}) {
    EXPECT_EQ(name_to_text(s), s);
    EXPECT_EQ(text_to_name(s), s);
  }
}

TEST(NameText, EachInvalidByteIsItsOwnEscape) {
  EXPECT_EQ(name_to_text("\xff"), "\xef\x9f\xbf");  // U+F7FF
  EXPECT_EQ(name_to_text("\x80"), "\xef\x9e\x80");  // U+F780
  EXPECT_EQ(name_to_text("a\xff\xfe.txt"), "a" + esc(0xff) + esc(0xfe) + ".txt");
  EXPECT_EQ(name_to_text("\x80\xbf"), esc(0x80) + esc(0xbf));                  // lone continuations
  EXPECT_EQ(name_to_text("\xc0\xaf"), esc(0xc0) + esc(0xaf));                  // overlong '/'
  EXPECT_EQ(name_to_text("\xe0\x80\xaf"), esc(0xe0) + esc(0x80) + esc(0xaf));  // overlong
  EXPECT_EQ(name_to_text("\xed\xa0\x80"), esc(0xed) + esc(0xa0) + esc(0x80));  // a surrogate
  EXPECT_EQ(name_to_text("\xf4\x90\x80\x80"),                                  // past U+10FFFF
            esc(0xf4) + esc(0x90) + esc(0x80) + esc(0x80));
  EXPECT_EQ(name_to_text("a\xe2\x82"), "a" + esc(0xe2) + esc(0x82));  // cut at the end
  EXPECT_EQ(name_to_text("\xe2\x82z"), esc(0xe2) + esc(0x82) + "z");  // cut in the middle
  // A valid character right after an invalid byte stays itself.
  EXPECT_EQ(name_to_text("\xe2\xc3\xa9"), esc(0xe2) + "\xc3\xa9");
  // Invalid bytes deep in a long ASCII run (the eight-at-a-time path).
  EXPECT_EQ(name_to_text(std::string(17, 'a') + "\xff" + std::string(9, 'b')),
            std::string(17, 'a') + esc(0xff) + std::string(9, 'b'));
}

TEST(NameText, ANameHoldingTheReservedRangeEscapesItsBytes) {
  // U+F780 and U+F7FF written in a name, as valid UTF-8.
  EXPECT_EQ(name_to_text("b\xef\x9e\x80"), "b" + esc(0xef) + esc(0x9e) + esc(0x80));
  EXPECT_EQ(name_to_text("\xef\x9f\xbf"), esc(0xef) + esc(0x9f) + esc(0xbf));
  EXPECT_EQ(text_to_name("b" + esc(0xef) + esc(0x9e) + esc(0x80)), "b\xef\x9e\x80");
  // Their neighbours U+F77F and U+F800 are ordinary characters.
  EXPECT_EQ(name_to_text("\xef\x9d\xbf\xef\xa0\x80"), "\xef\x9d\xbf\xef\xa0\x80");
}

TEST(NameText, OnlyTheSpellingNameToTextGivesIsAccepted) {
  // "é" spelled as the escapes of its bytes: a second name for é.
  EXPECT_EQ(text_to_name(esc(0xc3) + esc(0xa9)), std::nullopt);
  EXPECT_EQ(text_to_name("x/" + esc(0xe2) + esc(0x82) + esc(0xac)), std::nullopt);  // €
  // Bytes that stay invalid once decoded are the canonical spelling.
  EXPECT_EQ(text_to_name(esc(0xc3)), "\xc3");
  EXPECT_EQ(text_to_name(esc(0xc3) + "x"), "\xc3x");
  EXPECT_EQ(text_to_name(esc(0xed) + esc(0xa0) + esc(0x80)), "\xed\xa0\x80");
}

TEST(NameText, EveryByteStringRoundTrips) {
  std::mt19937 rng(15);
  // Bytes that make up the interesting cases more often than chance would.
  const unsigned char common[] = {'a',  '/',  '.',  0x80, 0xbf, 0xc0, 0xc2, 0xc3, 0xdf, 0xe0, 0xed,
                                  0xef, 0x9e, 0x9f, 0xa0, 0xf0, 0xf4, 0x90, 0x8f, 0xf5, 0xff};
  for (int round = 0; round < 200000; ++round) {
    std::string name(rng() % 24, '\0');
    for (char& c : name)
      c = static_cast<char>(rng() % 2 ? common[rng() % sizeof common] : rng() % 256);
    const std::string text = name_to_text(name);
    ASSERT_EQ(count_invalid_utf8(text), 0u) << ::testing::PrintToString(name);
    ASSERT_EQ(ascii_count(text), ascii_count(name)) << ::testing::PrintToString(name);
    ASSERT_EQ(text_to_name(text), name) << ::testing::PrintToString(name);
  }
}

TEST(NameText, AcceptedTextsAreExactlyTheShownOnes) {
  std::mt19937 rng(16);
  const auto utf8 = [](char32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return s;
  };
  for (int round = 0; round < 100000; ++round) {
    std::string text;
    for (std::size_t n = rng() % 8; n > 0; --n) {
      switch (rng() % 4) {
        case 0:
          text += utf8(0xf780 + rng() % 0x80);
          break;
        case 1:
          text += utf8(0x61 + rng() % 3);
          break;
        case 2:
          text += utf8(0xe9);
          break;
        default:
          text += utf8(0xf700 + rng() % 0x100);
      }
    }
    if (const std::optional<std::string> name = text_to_name(text)) {
      ASSERT_EQ(name_to_text(*name), text) << ::testing::PrintToString(text);
    }
  }
}

TEST(NameText, PathArgumentsAreDecodedOnce) {
  EXPECT_EQ(resolve_path("/ws", "a" + esc(0xff) + esc(0xfe) + ".txt", "read file"),
            "/ws/a\xff\xfe.txt");
  EXPECT_EQ(resolve_path("/ws", "/abs/b" + esc(0xef) + esc(0x9e) + esc(0x80), "read file"),
            "/abs/b\xef\x9e\x80");
  const auto twice = resolve_path("/ws", esc(0xc3) + esc(0xa9), "read file");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().why.find("write that character itself"), std::string::npos);
}

}  // namespace
}  // namespace brig::files
