// Legacy era (initialize handshake): negotiation, lifecycle, ping, logging.
#include <gtest/gtest.h>

#include "protocol/error_codes.h"
#include "tests/protocol/session_test_util.h"

namespace brig::protocol {
namespace {

using namespace testing;
namespace ec = error_code;

Json expected_initialize(std::string_view version) {
  return Json{
      {"jsonrpc", "2.0"},
      {"id", 0},
      {"result",
       {{"protocolVersion", version},
        {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", Json::object()}}},
        {"serverInfo", {{"name", "brig-test"}, {"version", "1.2.3"}}},
        {"instructions", "Use echo."}}}};
}

class EachLegacyVersion : public ::testing::TestWithParam<const char*> {};

TEST_P(EachLegacyVersion, InitializeAnswersTheClientsVersion) {
  Session s = make_session();
  EXPECT_EQ(initialize(s, GetParam()), expected_initialize(GetParam()));
  EXPECT_EQ(s.legacy_version(), GetParam());
  // And the session now serves legacy requests without _meta.
  Json list = one_reply(s.on_line(request(1, "tools/list")));
  EXPECT_EQ(list["result"]["tools"].size(), 2u);
  EXPECT_FALSE(list["result"].contains("resultType"));
  EXPECT_FALSE(list["result"].contains("ttlMs"));
}

INSTANTIATE_TEST_SUITE_P(Versions, EachLegacyVersion,
                         ::testing::Values("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"));

TEST(Legacy, UnsupportedVersionGetsNewestLegacy) {
  for (auto v : {"2099-01-01", "2026-07-28", "1.0", ""}) {
    Session s = make_session();
    EXPECT_EQ(initialize(s, v), expected_initialize("2025-11-25")) << v;
  }
}

TEST(Legacy, InstructionsLeftOutWhenEmpty) {
  Session s(ServerInfo{"b", "1"}, "", test_tools());
  Json r = initialize(s, "2025-06-18");
  EXPECT_FALSE(r["result"].contains("instructions"));
}

TEST(Legacy, InitializeWithoutProtocolVersionIsInvalidParams) {
  Session s = make_session();
  for (Json params : {Json(), Json::object(), Json{{"protocolVersion", 20250618}}}) {
    Json r = one_reply(s.on_line(request(1, "initialize", params)));
    EXPECT_EQ(r["error"]["code"], ec::kInvalidParams) << params;
    EXPECT_EQ(r["id"], 1);
  }
  EXPECT_FALSE(s.legacy_version());
  Json arr = one_reply(s.on_line(request(2, "initialize", Json::array({"2025-06-18"}))));
  EXPECT_EQ(arr["error"]["code"], ec::kInvalidParams);
}

TEST(Legacy, SecondInitializeIsRefused) {
  Session s = make_session();
  initialize(s, "2025-06-18");
  Json r = one_reply(s.on_line(request(5, "initialize", Json{{"protocolVersion", "2025-11-25"}})));
  EXPECT_EQ(r, Json::parse(R"({"jsonrpc":"2.0","id":5,"error":{"code":-32600,
      "message":"Invalid Request: already initialized with protocol version 2025-06-18"}})"));
  EXPECT_EQ(s.legacy_version(), "2025-06-18");
}

TEST(Legacy, PingWorksBeforeAndAfterInitialize) {
  Session s = make_session();
  EXPECT_EQ(one_reply(s.on_line(request("p", "ping"))),
            Json::parse(R"({"jsonrpc":"2.0","id":"p","result":{}})"));
  initialize(s, "2025-11-25");
  EXPECT_EQ(one_reply(s.on_line(request(7, "ping", Json::object()))),
            Json::parse(R"({"jsonrpc":"2.0","id":7,"result":{}})"));
}

TEST(Legacy, RequestsBeforeInitializeAreInvalidParams) {
  Session s = make_session();
  for (auto method : {"tools/list", "tools/call", "logging/setLevel"}) {
    Json r = one_reply(s.on_line(request(3, method, Json{{"name", "echo"}})));
    EXPECT_EQ(r["error"]["code"], ec::kInvalidParams) << method;
    EXPECT_EQ(r["id"], 3);
    EXPECT_EQ(r["error"]["message"],
              "Invalid params: send initialize first, or set "
              "_meta[\"io.modelcontextprotocol/protocolVersion\"] to \"2026-07-28\" and "
              "_meta[\"io.modelcontextprotocol/clientCapabilities\"]");
  }
}

TEST(Legacy, UnknownMethodIsMethodNotFoundBeforeAndAfterInitialize) {
  Session s = make_session();
  EXPECT_EQ(one_reply(s.on_line(request(1, "resources/list"))),
            Json::parse(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,
                "message":"Method not found: resources/list"}})"));
  initialize(s, "2025-11-25");
  EXPECT_EQ(one_reply(s.on_line(request(2, "no/such")))["error"]["code"], ec::kMethodNotFound);
}

TEST(Legacy, NotificationsNeverGetAReply) {
  Session s = make_session();
  EXPECT_TRUE(s.on_line(notification("notifications/initialized")).empty());
  EXPECT_TRUE(s.on_line(notification("no/such/notification", Json{{"x", 1}})).empty());
  EXPECT_TRUE(s.on_line(notification("notifications/cancelled", Json{{"requestId", 99}})).empty());
  EXPECT_TRUE(
      s.on_line(notification("notifications/cancelled", Json{{"requestId", nullptr}})).empty());
  EXPECT_TRUE(s.on_line(notification("notifications/cancelled")).empty());
  EXPECT_TRUE(s.on_line(notification("ping")).empty());  // ping as a notification
}

TEST(Legacy, ResponsesSentByTheClientAreIgnored) {
  Session s = make_session();
  initialize(s, "2025-11-25");
  EXPECT_TRUE(s.on_line(R"({"jsonrpc":"2.0","id":1,"result":{}})").empty());
  EXPECT_TRUE(s.on_line(R"({"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}})").empty());
  EXPECT_TRUE(
      s.on_line(R"({"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}})").empty());
}

TEST(Legacy, DiscoverWithoutMetaIsInvalidParams) {
  Session s = make_session();
  Json r = one_reply(s.on_line(request(1, "server/discover")));
  EXPECT_EQ(r["error"]["code"], ec::kInvalidParams);
  EXPECT_EQ(r["id"], 1);
}

TEST(Legacy, SetLevelGatesNotifications) {
  Session s = make_session();
  initialize(s, "2025-06-18");
  // Nothing is sent until the client asks for a level.
  EXPECT_FALSE(s.log(std::nullopt, LogLevel::emergency, "brig", "x"));
  EXPECT_EQ(one_reply(s.on_line(request(1, "logging/setLevel", Json{{"level", "warning"}}))),
            Json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  EXPECT_FALSE(s.log(std::nullopt, LogLevel::info, "brig", "x"));
  auto line = s.log(std::nullopt, LogLevel::warning, "brig", Json{{"disk", "full"}});
  ASSERT_TRUE(line);
  EXPECT_EQ(Json::parse(*line), Json::parse(R"({"jsonrpc":"2.0","method":"notifications/message",
      "params":{"level":"warning","logger":"brig","data":{"disk":"full"}}})"));
  auto no_logger = s.log(std::nullopt, LogLevel::error, "", "e");
  ASSERT_TRUE(no_logger);
  EXPECT_FALSE(Json::parse(*no_logger)["params"].contains("logger"));
}

TEST(Legacy, SetLevelRejectsUnknownLevels) {
  Session s = make_session();
  initialize(s, "2025-11-25");
  for (Json params : {Json{{"level", "verbose"}}, Json{{"level", 3}}, Json::object()}) {
    Json r = one_reply(s.on_line(request(2, "logging/setLevel", params)));
    EXPECT_EQ(r["error"]["code"], ec::kInvalidParams) << params;
  }
  EXPECT_FALSE(s.log(std::nullopt, LogLevel::emergency, "brig", "x"));
}

TEST(Legacy, LogForALegacyCallUsesTheSessionLevel) {
  Session s = make_session();
  initialize(s, "2025-11-25");
  auto call = calls(s.on_line(request(1, "tools/call", Json{{"name", "slow"}})));
  ASSERT_EQ(call.size(), 1u);
  EXPECT_FALSE(s.log(call[0].call, LogLevel::error, "t", "x"));
  s.on_line(request(2, "logging/setLevel", Json{{"level", "debug"}}));
  EXPECT_TRUE(s.log(call[0].call, LogLevel::debug, "t", "x"));
}

TEST(Legacy, ParamsThatAreAnArrayAreInvalidParams) {
  Session s = make_session();
  initialize(s, "2025-11-25");
  Json r = one_reply(s.on_line(request(4, "tools/list", Json::array())));
  EXPECT_EQ(r["error"]["code"], ec::kInvalidParams);
}

TEST(Session, EveryBadLineGetsExactlyOneAnswer) {
  Session s = make_session();
  EXPECT_EQ(one_reply(s.on_line("{not json")),
            Json::parse(R"({"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error",
                "data":{"detail":"[json.exception.parse_error.101] parse error at line 1, column 3: syntax error while parsing object key - invalid literal; last read: '{no'; expected string literal"}}})"));
  EXPECT_EQ(one_reply(s.on_line(R"({"jsonrpc":"2.0","id":null,"method":"ping"})")),
            Json::parse(R"({"jsonrpc":"2.0","error":{"code":-32600,
                "message":"Invalid Request: id must not be null"}})"));
  EXPECT_EQ(one_reply(s.on_line(R"({"id":1,"method":"ping"})"))["error"]["code"],
            ec::kInvalidRequest);
  EXPECT_EQ(one_reply(s.on_line(R"({"jsonrpc":"2.0","id":1,"method":["ping"]})"))["error"]["code"],
            ec::kInvalidRequest);
  EXPECT_EQ(one_reply(s.on_line(std::string(100000, '[')))["error"]["code"], ec::kInvalidRequest);
  EXPECT_EQ(one_reply(s.on_line("\x01\x02\xff\xfe garbage"))["error"]["code"], ec::kParseError);
  // Still serving afterwards.
  EXPECT_EQ(one_reply(s.on_line(request(1, "ping")))["result"], Json::object());
}

TEST(Session, TooLongLineAnswer) {
  SessionOptions o;
  o.max_line_bytes = 1000;
  Session s = make_session(o);
  EXPECT_EQ(one_reply(s.on_too_long_line()), Json::parse(R"({"jsonrpc":"2.0","error":{"code":-32600,
                "message":"Invalid Request: line longer than 1000 bytes; skipped",
                "data":{"limit":1000}}})"));
}

TEST(Session, NestingLimitIsConfigurable) {
  SessionOptions o;
  o.max_nesting_depth = 3;
  Session s = make_session(o);
  EXPECT_EQ(one_reply(s.on_line(request(1, "ping", Json{{"a", {{"b", 1}}}})))["result"],
            Json::object());
  Json r = one_reply(s.on_line(request(2, "ping", Json{{"a", {{"b", {{"c", 1}}}}}})));
  EXPECT_EQ(r["error"]["code"], ec::kInvalidRequest);
  EXPECT_FALSE(r.contains("id"));
}

}  // namespace
}  // namespace brig::protocol
