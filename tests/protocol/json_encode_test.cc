// The fast encoder must give exactly the bytes of nlohmann's
// dump(-1, ' ', false, error_handler_t::replace), which brig sent before it:
// every case here compares the two byte for byte.
#include "protocol/json_encode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "protocol/json_rpc.h"
#include "protocol/mcp_types.h"

namespace brig::protocol {
namespace {

std::string reference(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string fast(const Json& j) {
  std::string out;
  append_json(out, j);
  return out;
}

std::string hex(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
    out += ' ';
  }
  return out;
}

// Compares one string as a value, as an object key, and behind prefixes of
// 0..9 plain bytes, so that each byte lands at every offset of the encoder's
// eight-byte words and at a word's end.
::testing::AssertionResult same_string(const std::string& s) {
  for (std::size_t pad = 0; pad <= 9; ++pad) {
    const std::string padded = std::string(pad, 'p') + s;
    for (const Json& j : {Json(padded), Json{{padded, padded}}}) {
      if (fast(j) != reference(j))
        return ::testing::AssertionFailure()
               << "bytes " << hex(padded) << "\n fast:      " << hex(fast(j))
               << "\n reference: " << hex(reference(j));
    }
  }
  return ::testing::AssertionSuccess();
}

std::string utf8(std::uint32_t cp) {
  // Encodes surrogates too (ED A0 80 ...): those are ill-formed UTF-8 the
  // encoder must replace.
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

TEST(JsonEncode, EverySingleByte) {
  for (unsigned b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    EXPECT_TRUE(same_string(one));
    EXPECT_TRUE(same_string("a" + one + "z"));
    EXPECT_TRUE(same_string(one + "0123456789abcdef"));
  }
}

TEST(JsonEncode, EscapesAsNlohmannDoes) {
  // Spelled out once, so a reader sees the contract without running nlohmann.
  EXPECT_EQ(fast(Json(std::string("\"\\\b\f\n\r\t\x01\x1f\x7f/"))), R"("\"\\\b\f\n\r\t\u0001\u001f)"
                                                                    "\x7f"
                                                                    R"(/")");
  EXPECT_EQ(fast(Json(std::string("\0", 1))), R"("\u0000")");
  EXPECT_EQ(fast(Json("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80")),
            "\"a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
  EXPECT_EQ(fast(Json("\xFF")), "\"\xEF\xBF\xBD\"");
}

TEST(JsonEncode, EveryTwoByteString) {
  for (unsigned a = 0; a < 256; ++a) {
    for (unsigned b = 0; b < 256; ++b) {
      const std::string s{static_cast<char>(a), static_cast<char>(b)};
      const Json j(s);
      ASSERT_EQ(fast(j), reference(j)) << hex(s);
    }
  }
}

// Bytes where UTF-8 validity changes: controls, the escaped characters, DEL,
// continuation-range edges, every special lead byte and the never-valid bytes.
const std::vector<unsigned char> kEdgeBytes = {
    0x00, 0x1F, 0x20, '"',  '\\', 'a',  0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1,
    0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFF};

TEST(JsonEncode, EveryThreeAndFourByteStringOfEdgeBytes) {
  const std::size_t n = kEdgeBytes.size();
  std::string s(4, '\0');
  for (std::size_t i = 0; i < n * n * n * n; ++i) {
    std::size_t k = i;
    for (auto& c : s) c = static_cast<char>(kEdgeBytes[k % n]), k /= n;
    const Json j(s);
    ASSERT_EQ(fast(j), reference(j)) << hex(s);
    if (i < n * n * n) {
      const Json three(s.substr(0, 3));
      ASSERT_EQ(fast(three), reference(three)) << hex(s.substr(0, 3));
    }
  }
}

TEST(JsonEncode, EveryCodePointAndSurrogate) {
  // All of U+0000..U+10FFFF (surrogates encoded as ill-formed three-byte
  // sequences) in one string, and each boundary on its own.
  std::string all;
  for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) all += utf8(cp);
  EXPECT_EQ(fast(Json(all)), reference(Json(all)));
  for (std::uint32_t cp : {0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xD800u, 0xDBFFu, 0xDC00u,
                           0xDFFFu, 0xE000u, 0xFFFDu, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    EXPECT_TRUE(same_string(utf8(cp))) << std::hex << cp;
  }
}

TEST(JsonEncode, OverlongOutOfRangeAndTruncatedSequences) {
  for (const char* s : {
           "\xC0\x80",
           "\xC1\xBF",
           "\xE0\x80\x80",
           "\xE0\x9F\xBF",
           "\xF0\x80\x80\x80",
           "\xF0\x8F\xBF\xBF",  // overlong forms
           "\xF4\x90\x80\x80",
           "\xF5\x80\x80\x80",
           "\xF7\xBF\xBF\xBF",
           "\xFB\xBF\xBF\xBF\xBF",
           "\xFD\xBF\xBF\xBF\xBF\xBF",  // beyond U+10FFFF, old 5/6-byte forms
           "\xED\xA0\x80\xED\xB0\x80",  // a surrogate pair, as CESU-8
           "\xC3",
           "\xE2\x82",
           "\xF0\x9F\x98",
           "\xE2",
           "\xF0",
           "\xF0\x9F",  // cut off at the end
           "\xE2\x82z",
           "\xF0\x9F\x98z",
           "\xF0\x9F\x98\xE2\x82\xAC",  // cut off in the middle
           "\x80\x80\x80",
           "\xBF",
           "\xC3\xA9\xA9",
           "\xE2\x82\xAC\x82",  // stray continuations
       }) {
    EXPECT_TRUE(same_string(s));
  }
}

TEST(JsonEncode, RandomByteStrings) {
  std::mt19937 rng(20261124);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 64);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(kEdgeBytes.size()) - 1);
  std::uniform_int_distribution<int> percent(0, 99);
  for (int round = 0; round < 4000; ++round) {
    std::string s(static_cast<std::size_t>(length(rng)) * (round % 4 == 0 ? 8 : 1), '\0');
    for (auto& c : s) {
      // Uniform bytes, edge bytes, and mostly-ASCII text with a few of either.
      const int mode = round % 3;
      const int p = percent(rng);
      if (mode == 0 || (mode == 2 && p < 5)) {
        c = static_cast<char>(byte(rng));
      } else if (mode == 1 || (mode == 2 && p < 10)) {
        c = static_cast<char>(kEdgeBytes[static_cast<std::size_t>(pick(rng))]);
      } else {
        c = static_cast<char>(0x20 + p);
      }
    }
    const Json j(s);
    ASSERT_EQ(fast(j), reference(j)) << hex(s);
    const Json key{{s, 1}};
    ASSERT_EQ(fast(key), reference(key)) << hex(s);
  }
}

TEST(JsonEncode, Numbers) {
  for (const Json& j : {Json(0),
                        Json(1),
                        Json(-1),
                        Json(42),
                        Json(std::numeric_limits<std::int64_t>::max()),
                        Json(std::numeric_limits<std::int64_t>::min()),
                        Json(std::uint64_t{0}),
                        Json(std::numeric_limits<std::uint64_t>::max()),
                        Json(0.0),
                        Json(-0.0),
                        Json(0.1),
                        Json(1.5),
                        Json(-2.25),
                        Json(1e300),
                        Json(-1e-300),
                        Json(5e-324),
                        Json(1e21),
                        Json(1e-7),
                        Json(123456789.0),
                        Json(std::numeric_limits<double>::max()),
                        Json(std::numeric_limits<double>::quiet_NaN()),
                        Json(std::numeric_limits<double>::infinity()),
                        Json(-std::numeric_limits<double>::infinity()),
                        Json(1.0 / 3.0)}) {
    EXPECT_EQ(fast(j), reference(j));
  }
}

TEST(JsonEncode, ScalarsAndContainers) {
  const Json tool_result = {
      {"content", {{{"type", "text"}, {"text", "line 1\nline\t2 \"q\"\n\xFF"}}}},
      {"structuredContent", {{"content", "line 1\nline\t2 \"q\"\n\xFF"}, {"lines", 3}}},
      {"isError", false},
      {"_meta", {{"z", nullptr}, {"a", true}, {"M", Json::array()}, {"", Json::object()}}}};
  for (const Json& j : {Json(), Json(true), Json(false), Json::array(), Json::object(), Json(""),
                        Json::array({Json(), Json::array(), Json::object(), 1, -1, 0.5, "x"}),
                        Json{{"b", 1}, {"a", 2}, {"ab", 3}, {"B", 4}, {"\xC3\xA9", 5}, {"\x01", 6}},
                        Json::binary({1, 2, 3}, 7), Json::binary({}), tool_result,
                        Json{{"jsonrpc", "2.0"}, {"id", 7}, {"result", tool_result}}}) {
    EXPECT_EQ(fast(j), reference(j));
  }
}

TEST(JsonEncode, RepeatedLongStrings) {
  // A long string met again is copied from the output: equal strings, strings
  // of equal size that differ only in their last byte, more distinct long
  // strings than are remembered, and repeats with escapes and invalid UTF-8.
  std::string text;
  for (int i = 0; text.size() < 20000; ++i)
    text += "line " + std::to_string(i) + "\t\"q\"\xFF\xE2\x82\n";
  std::string other = text;
  other.back() = 'x';
  Json many = Json::array();
  for (int round = 0; round < 3; ++round) {
    for (char c = 'a'; c <= 'g'; ++c) many.push_back(std::string(5000, c) + "\n");
  }
  for (const Json& j :
       {Json{{"content", {{{"type", "text"}, {"text", text}}}},
             {"structuredContent", {{"content", text}}}},
        Json::array({text, other, text, other, text.substr(0, 4096), text.substr(0, 4095), ""}),
        Json::array({text, text, text}), many, Json{{text, text}}}) {
    EXPECT_EQ(fast(j), reference(j));
    EXPECT_EQ(encode(j), reference(j));
  }
}

TEST(JsonEncode, DeepNesting) {
  // Up to the incoming limit (values echo client input) and well past it
  // (brig's own results are not bound by it).
  for (std::size_t depth :
       {kDefaultMaxNestingDepth - 1, kDefaultMaxNestingDepth, std::size_t{300}}) {
    Json arrays = "leaf\n";
    Json objects = 1;
    for (std::size_t i = 0; i < depth; ++i) {
      arrays = Json::array({arrays, i});
      // Three distinct keys, k0 k1 k2 (built by append: GCC 12 warns a false
      // -Wrestrict on "literal" + std::string at -O2).
      std::string key = "k";
      key += std::to_string(i % 3);
      objects = Json{{key, objects}, {"x", i}};
    }
    EXPECT_EQ(fast(arrays), reference(arrays));
    EXPECT_EQ(fast(objects), reference(objects));
  }
}

TEST(JsonEncode, AppendsToWhatIsThere) {
  std::string out = "[";
  append_json(out, Json{{"a", "b"}});
  append_json_string(out, "c\"");
  EXPECT_EQ(out, R"([{"a":"b"}"c\"")");
}

TEST(JsonEncode, EstimateIsExactWithoutEscapesAndBoundsNumbers) {
  const Json plain = {{"content", {{{"type", "text"}, {"text", std::string(5000, 'x')}}}},
                      {"isError", false},
                      {"none", nullptr},
                      {"list", {"a", "bc", Json::object()}}};
  EXPECT_EQ(estimate_json_size(plain), reference(plain).size() + (24 - 5) + (24 - 4));
  for (const Json& n :
       {Json(std::numeric_limits<std::int64_t>::min()),
        Json(std::numeric_limits<std::uint64_t>::max()), Json(-1e-300), Json(5e-324)}) {
    EXPECT_GE(estimate_json_size(n), reference(n).size());
  }
}

TEST(JsonEncode, EncodeLeavesRoomForTheNewline) {
  const Json j = {{"text", std::string(1 << 20, 'y') + "\n"}};
  std::string line = encode(j);
  EXPECT_EQ(line, reference(j));
  EXPECT_GT(line.capacity(), line.size());
}

TEST(JsonEncode, MovingOverloadsGiveTheSameJson) {
  // The outgoing path moves a tool result's text instead of copying it; the
  // moved-from forms must build the same messages as the copying ones.
  ToolResult tool = ToolResult::text(std::string(10000, 't'));
  tool.structured = Json{{"content", std::string(10000, 't')}, {"n", 2}};
  const Json copied = tool.to_json();
  const Response response{Id("r"), copied};
  const Json copied_response = to_json(response);
  EXPECT_EQ(std::move(tool).to_json(), copied);
  EXPECT_EQ(to_json(Response{Id("r"), copied}), copied_response);
  EXPECT_EQ(encode(to_json(Response{Id("r"), copied})), reference(copied_response));
}

}  // namespace
}  // namespace brig::protocol
