#include "protocol/request_scan.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/protocol/request_scan_oracle.h"

namespace brig::protocol {
namespace {

using testing::general;

// The scanner either declines line or agrees with the general path exactly.
::testing::AssertionResult agrees(std::string_view line, std::size_t depth = 64) {
  if (auto why = testing::disagreement(line, depth)) return ::testing::AssertionFailure() << *why;
  return ::testing::AssertionSuccess();
}

// Scanned, and equal to the general path.
void expect_scanned(std::string_view line) {
  SCOPED_TRACE(std::string(line));
  EXPECT_TRUE(scan_request(line, 64).has_value());
  EXPECT_TRUE(agrees(line));
}

const std::vector<std::string> kRequests = {
    R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}})",
    R"({"method":"tools/call","params":{"arguments":{"a":1,"b":-2.5e3},"name":"add"},"id":"x-1","jsonrpc":"2.0"})",
    R"( { "jsonrpc" : "2.0" , "id" : -7 , "method" : "ping" } )",
    "{\"jsonrpc\":\"2.0\",\r\n\t\"id\":0,\"method\":\"tools/list\",\"params\":{}}\r",
    R"({"jsonrpc":"2.0","id":9223372036854775807,"method":"m","params":{"n":18446744073709551615}})",
    R"({"jsonrpc":"2.0","id":-9223372036854775808,"method":"m","params":{"n":-9223372036854775808}})",
    R"({"jsonrpc":"2.0","id":-0,"method":"m","params":{"z":-0,"f":-0.0,"e":1E+2,"g":0.1e-5}})",
    R"({"jsonrpc":"2.0","id":2,"method":"m","params":{"a":[],"o":{},"l":[true,false,null,[[1]]]}})",
    R"({"jsonrpc":"2.0","id":3,"method":"m","params":{"dup":1,"dup":[2],"dup":"last"}})",
    R"({"jsonrpc":"2.0","id":4,"method":"m","params":{"s":"\"\\\/\b\f\n\r\t"}})",
    R"({"jsonrpc":"2.0","id":5,"method":"m","params":{"u":"\u0000\u00e9\u20AC\ud83d\ude00"}})",
    "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"m\",\"params\":{\"utf8\":\"\xc3\xa9\xe2\x82\xac"
    "\xf0\x9f\x98\x80\xed\x9f\xbf\xf4\x8f\xbf\xbf\x7f\"}}",
    R"({"jsonrpc":"2.0","id":"","method":"","params":{"":""}})",
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}})",
    R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x","arguments":null}})",
    R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}})",
    R"({"jsonrpc":"2.0","id":10,"params":{"name":"x","arguments":{}},"method":"tools/call"})",
    R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"arguments":[1],"x":{"a":[1]},"name":""}})",
    R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"arguments":"text","x":1,"x":2}})",
};

TEST(RequestScan, ReadsRequestsAsTheGeneralPathDoes) {
  for (const auto& line : kRequests) expect_scanned(line);
}

TEST(RequestScan, ReadsTheEnvelope) {
  auto r = scan_request(kRequests[0], 64);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, Id(1));
  EXPECT_EQ(r->method, "tools/call");
  ASSERT_TRUE(r->tool_call);
  EXPECT_EQ(r->tool_call->name, "echo");
  EXPECT_EQ(r->tool_call->arguments, Json::parse(R"({"text":"hello"})"));
  auto no_params = scan_request(R"({"jsonrpc":"2.0","id":"a","method":"ping"})", 64);
  ASSERT_TRUE(no_params);
  EXPECT_EQ(no_params->id, Id("a"));
  EXPECT_TRUE(no_params->params.is_null());
}

// A tools/call whose method comes first has name and arguments taken out
// of params; any other request, or a tools/call whose params come first,
// keeps them in params.
TEST(RequestScan, TakesAToolCallsNameAndArgumentsOutOfParams) {
  auto call = scan_request(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"n","arguments":{"a":[]}}})",
      64);
  ASSERT_TRUE(call && call->tool_call);
  EXPECT_EQ(call->tool_call->name, "n");
  EXPECT_EQ(call->tool_call->arguments, Json::parse(R"({"a":[]})"));
  EXPECT_EQ(call->params, Json::parse(R"({"_meta":{"progressToken":1}})"));

  auto bare = scan_request(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})", 64);
  ASSERT_TRUE(bare && bare->tool_call);
  EXPECT_FALSE(bare->tool_call->name);
  EXPECT_FALSE(bare->tool_call->arguments);
  EXPECT_TRUE(bare->params.is_null());

  auto params_first = scan_request(
      R"({"jsonrpc":"2.0","id":10,"params":{"name":"x","arguments":{}},"method":"tools/call"})",
      64);
  ASSERT_TRUE(params_first);
  EXPECT_FALSE(params_first->tool_call);
  EXPECT_EQ(params_first->params, Json::parse(R"({"name":"x","arguments":{}})"));

  auto other = scan_request(R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"n"}})", 64);
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->tool_call);
}

TEST(RequestScan, DeclinesWhatIsNotAPlainRequest) {
  const std::vector<std::string> declined = {
      "", "   ", "[]", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])",
      "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",  // BOM
      R"({})", R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
      R"({"jsonrpc":"2.0","id":1,"result":{}})",
      R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"ping","extra":1})",
      R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})",
      R"({"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"})",
      R"({"jsonrpc":"2.0","id":1,"method":"ping","method":"ping"})",
      R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{},"params":{}})",
      // Repeated or non-string name, repeated arguments: the DOM's "last one
      // wins" is the general path's to apply.
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{},"arguments":{}}})",
      R"({"jsonrpc":"1.0","id":1,"method":"ping"})", R"({"jsonrpc":2.0,"id":1,"method":"ping"})",
      R"({"id":1,"method":"ping"})", R"({"jsonrpc":"2.0","id":null,"method":"ping"})",
      R"({"jsonrpc":"2.0","id":1.0,"method":"ping"})",
      R"({"jsonrpc":"2.0","id":true,"method":"ping"})",
      R"({"jsonrpc":"2.0","id":{},"method":"ping"})",
      R"({"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"})",
      R"({"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"})",
      R"({"jsonrpc":"2.0","id":1,"method":7})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":[]})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":null})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"n":18446744073709551616}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"n":1e400}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"n":01}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"n":1.}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"n":+1}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\x"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\ud83d"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\ude00"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\u12G4"}})",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"\t\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"\xc0\xaf\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"\xed\xa0\x80\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"\xf4\x90\x80\x80\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"\xe2\x82\"}}",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"t":tru}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,]}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m"} x)", R"({"jsonrpc":"2.0","id":1,"method":"m"}{})",
      R"({"jsonrpc":"2.0","id":1,"method":"m")",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\f",  // not JSON whitespace
  };
  for (const auto& line : declined) {
    SCOPED_TRACE(line);
    EXPECT_FALSE(scan_request(line, 64));
  }
}

TEST(RequestScan, DeclinesIdsTheGeneralPathRefuses) {
  const std::string at_limit(kMaxIdBytes, 'i');
  expect_scanned(R"({"jsonrpc":"2.0","id":")" + at_limit + R"(","method":"ping"})");
  EXPECT_FALSE(
      scan_request(R"({"jsonrpc":"2.0","id":")" + at_limit + R"(i","method":"ping"})", 64));
}

TEST(RequestScan, CountsNestingLikeThePreScan) {
  auto nested = [](int levels) {
    std::string args;
    for (int i = 0; i < levels; ++i) args += "[";
    for (int i = 0; i < levels; ++i) args += "]";
    return R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":)" + args + "}}";
  };
  // Envelope and params are two levels.
  expect_scanned(nested(62));
  EXPECT_FALSE(scan_request(nested(63), 64));
  EXPECT_FALSE(general(nested(63), 64));
  EXPECT_TRUE(scan_request(nested(3), 5));
  EXPECT_FALSE(scan_request(nested(4), 5));
  EXPECT_FALSE(scan_request(R"({"jsonrpc":"2.0","id":1,"method":"m"})", 0));
}

// Strings are skimmed eight bytes at a time: every kind of byte at every
// offset of a word, near the end of the line too.
TEST(RequestScan, ReadsEachByteOfAStringWhereverItFalls) {
  const std::vector<std::string> specials = {"\"",   "\\n",      "\\u00e9",      "\t",
                                             "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                             "\xc3", "\xff"};
  for (const auto& special : specials) {
    for (std::size_t at = 0; at < 20; ++at) {
      const std::string text = std::string(at, 'a') + special + std::string(20 - at, 'b');
      const std::string line =
          R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"s":")" + text + "\"}}";
      SCOPED_TRACE(line);
      EXPECT_TRUE(agrees(line));
      EXPECT_EQ(scan_request(line, 64).has_value(), general(line, 64).has_value());
      const std::string at_end = R"({"jsonrpc":"2.0","id":1,"method":")" + text + "\"}";
      EXPECT_TRUE(agrees(at_end));
      EXPECT_EQ(scan_request(at_end, 64).has_value(), general(at_end, 64).has_value());
    }
  }
}

// Every mutation of valid requests: the scanner declines or agrees.
TEST(RequestScan, AgreesWithTheGeneralPathOnMutatedLines) {
  std::mt19937 random(12345);
  const std::string alphabet = "{}[]\":,\\/ -+.0123456789eEtrufalsn\xc3\xa9\xed\xa0\x80\xff\tu";
  int scanned = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string line = kRequests[random() % kRequests.size()];
    const int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits && !line.empty(); ++e) {
      const std::size_t at = random() % line.size();
      const char c = alphabet[random() % alphabet.size()];
      switch (random() % 4) {
        case 0:
          line[at] = c;
          break;
        case 1:
          line.insert(line.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        case 2:
          line.erase(at, 1);
          break;
        default:
          line.resize(at);
          break;
      }
    }
    SCOPED_TRACE(line);
    ASSERT_TRUE(agrees(line));
    scanned += scan_request(line, 64).has_value();
  }
  // The mutations must reach both outcomes for the comparison to mean anything.
  EXPECT_GT(scanned, 1000);
}

}  // namespace
}  // namespace brig::protocol
