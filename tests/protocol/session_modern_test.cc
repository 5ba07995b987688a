// Modern era (2026-07-28, per-request _meta): discovery, version errors,
// result decoration, per-request logging, and both eras on one connection.
#include <gtest/gtest.h>

#include "protocol/error_codes.h"
#include "tests/protocol/session_test_util.h"

namespace brig::protocol {
namespace {

using namespace testing;
namespace ec = error_code;

const Json kServerMeta =
    Json::parse(R"({"io.modelcontextprotocol/serverInfo":{"name":"brig-test","version":"1.2.3"}})");

TEST(Modern, Discover) {
  Session s = make_session();
  EXPECT_EQ(one_reply(s.on_line(modern("d", "server/discover"))), Json::parse(R"({
    "jsonrpc":"2.0","id":"d","result":{
      "resultType":"complete",
      "supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],
      "capabilities":{"tools":{"listChanged":false},"logging":{}},
      "instructions":"Use echo.",
      "ttlMs":3600000,"cacheScope":"private",
      "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"brig-test","version":"1.2.3"}}}})"));
  EXPECT_FALSE(s.legacy_version());  // modern requests leave no session state
}

TEST(Modern, CacheHintsAreConfigurable) {
  SessionOptions o;
  o.list_ttl_ms = 0;
  o.cache_scope = "public";
  Session s = make_session(o);
  Json r = one_reply(s.on_line(modern(1, "tools/list")))["result"];
  EXPECT_EQ(r["ttlMs"], 0);
  EXPECT_EQ(r["cacheScope"], "public");
}

TEST(Modern, UnsupportedVersionIs32022WithSupportedAndRequested) {
  Session s = make_session();
  for (auto method : {"server/discover", "tools/list", "tools/call", "ping"}) {
    Json r = one_reply(
        s.on_line(modern(9, method, Json::object(),
                         Json{{"io.modelcontextprotocol/protocolVersion", "1900-01-01"}})));
    EXPECT_EQ(r, Json::parse(R"({"jsonrpc":"2.0","id":9,"error":{"code":-32022,
        "message":"Unsupported protocol version",
        "data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],
                "requested":"1900-01-01"}}})"))
        << method;
  }
}

TEST(Modern, MissingOrMalformedMetaIsInvalidParams) {
  Session s = make_session();
  const std::string pv = "io.modelcontextprotocol/protocolVersion";
  const std::string caps = "io.modelcontextprotocol/clientCapabilities";
  std::vector<Json> metas = {
      Json{{caps, Json::object()}},                  // no protocolVersion
      Json{{pv, "2026-07-28"}},                      // no clientCapabilities
      Json{{pv, "2026-07-28"}, {caps, "all"}},       // capabilities not an object
      Json{{pv, 20260728}, {caps, Json::object()}},  // version not a string
      Json{
          {pv, "2026-07-28"}, {caps, Json::object()}, {"io.modelcontextprotocol/logLevel", "loud"}},
      Json{{pv, "2026-07-28"}, {caps, Json::object()}, {"progressToken", 1.5}},
      Json("not an object"),
  };
  for (const auto& meta : metas) {
    Json r = one_reply(s.on_line(request(1, "tools/list", Json{{"_meta", meta}})));
    EXPECT_EQ(r["error"]["code"], ec::kInvalidParams) << meta;
    EXPECT_EQ(r["id"], 1) << meta;
  }
  // server/discover with no _meta at all.
  EXPECT_EQ(one_reply(s.on_line(request(2, "server/discover")))["error"]["code"],
            ec::kInvalidParams);
}

TEST(Modern, PingAndSetLevelAreMethodNotFound) {
  Session s = make_session();
  for (auto method : {"ping", "logging/setLevel"}) {
    Json r = one_reply(s.on_line(modern(3, method, Json{{"level", "debug"}})));
    EXPECT_EQ(r, Json::parse(std::string(R"({"jsonrpc":"2.0","id":3,"error":{"code":-32601,
        "message":"Method not found: )") +
                             method + R"j( (not part of protocol version 2026-07-28)"}})j"))
        << method;
  }
  EXPECT_EQ(one_reply(s.on_line(modern(4, "resources/list")))["error"]["code"],
            ec::kMethodNotFound);
}

TEST(Modern, ToolsListIsDecorated) {
  Session s = make_session();
  Json r = one_reply(s.on_line(modern(1, "tools/list")));
  EXPECT_EQ(r["result"]["resultType"], "complete");
  EXPECT_EQ(r["result"]["_meta"], kServerMeta);
  EXPECT_EQ(r["result"]["ttlMs"], 3600000);
  EXPECT_EQ(r["result"]["cacheScope"], "private");
  EXPECT_EQ(r["result"]["tools"][0], test_tools()[0].to_json());
}

TEST(Modern, ToolCallResultIsDecorated) {
  Session s = make_session();
  auto c = calls(
      s.on_line(modern(1, "tools/call", Json{{"name", "echo"}, {"arguments", {{"text", "hi"}}}})));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].tool, "echo");
  EXPECT_EQ(c[0].arguments, Json::parse(R"({"text":"hi"})"));
  EXPECT_EQ(one_reply(s.complete(c[0].call, ToolResult::text("hi"))), Json::parse(R"({
    "jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false,
    "resultType":"complete",
    "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"brig-test","version":"1.2.3"}}}})"));
}

TEST(Modern, InvalidArgumentsResultIsDecorated) {
  Session s = make_session();
  Json r = one_reply(
      s.on_line(modern(2, "tools/call", Json{{"name", "echo"}, {"arguments", {{"text", 5}}}})));
  EXPECT_EQ(r, Json::parse(R"({"jsonrpc":"2.0","id":2,"result":{
    "content":[{"type":"text",
      "text":"invalid arguments for tool echo: arguments.text: expected string, got integer"}],
    "isError":true,"resultType":"complete",
    "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"brig-test","version":"1.2.3"}}}})"));
}

TEST(Modern, LogsOnlyWhenTheRequestAskedForALevel) {
  Session s = make_session();
  auto quiet = calls(s.on_line(modern(1, "tools/call", Json{{"name", "slow"}})));
  auto chatty = calls(s.on_line(modern(2, "tools/call", Json{{"name", "slow"}},
                                       Json{{"io.modelcontextprotocol/logLevel", "info"}})));
  ASSERT_EQ(quiet.size(), 1u);
  ASSERT_EQ(chatty.size(), 1u);
  EXPECT_FALSE(s.log(quiet[0].call, LogLevel::emergency, "t", "x"));
  EXPECT_FALSE(s.log(chatty[0].call, LogLevel::debug, "t", "x"));
  auto line = s.log(chatty[0].call, LogLevel::info, "t", "x");
  ASSERT_TRUE(line);
  EXPECT_EQ(Json::parse(*line), Json::parse(R"({"jsonrpc":"2.0","method":"notifications/message",
      "params":{"level":"info","logger":"t","data":"x"}})"));
  // Connection-level logs are a legacy thing: no setLevel, nothing sent.
  EXPECT_FALSE(s.log(std::nullopt, LogLevel::emergency, "t", "x"));
}

TEST(Modern, LegacySetLevelDoesNotLeakIntoModernCalls) {
  Session s = make_session();
  initialize(s, "2025-11-25");
  s.on_line(request(1, "logging/setLevel", Json{{"level", "debug"}}));
  auto c = calls(s.on_line(modern(2, "tools/call", Json{{"name", "slow"}})));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(s.log(c[0].call, LogLevel::error, "t", "x"));
}

TEST(Modern, InitializeWithModernMetaIsStillTheLegacyHandshake) {
  Session s = make_session();
  Json r = one_reply(s.on_line(modern(0, "initialize", Json{{"protocolVersion", "2025-06-18"}})));
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  EXPECT_FALSE(r["result"].contains("resultType"));
}

TEST(Modern, LegacyVersionInMetaIsServedAsLegacy) {
  Session s = make_session();
  Json meta{{"io.modelcontextprotocol/protocolVersion", "2025-11-25"}};
  Json before = one_reply(s.on_line(request(1, "tools/list", Json{{"_meta", meta}})));
  EXPECT_EQ(before["error"]["code"], ec::kInvalidParams);  // not initialized
  initialize(s, "2025-11-25");
  Json after = one_reply(s.on_line(request(2, "tools/list", Json{{"_meta", meta}})));
  EXPECT_FALSE(after["result"].contains("resultType"));
}

TEST(BothEras, OneConnectionIsNotLockedToItsFirstEra) {
  Session s = make_session();
  // Modern first...
  EXPECT_EQ(one_reply(s.on_line(modern(1, "tools/list")))["result"]["resultType"], "complete");
  // ...then a legacy handshake on the same connection...
  EXPECT_EQ(initialize(s, "2025-06-18")["result"]["protocolVersion"], "2025-06-18");
  Json legacy = one_reply(s.on_line(request(2, "tools/list")));
  EXPECT_FALSE(legacy["result"].contains("resultType"));
  // ...and each modern request is still checked on its own.
  EXPECT_EQ(one_reply(s.on_line(modern(3, "tools/list")))["result"]["resultType"], "complete");
  Json bad =
      one_reply(s.on_line(modern(4, "tools/list", Json::object(),
                                 Json{{"io.modelcontextprotocol/protocolVersion", "2027-01-01"}})));
  EXPECT_EQ(bad["error"]["code"], ec::kUnsupportedProtocolVersion);
  EXPECT_EQ(bad["error"]["data"]["requested"], "2027-01-01");
  EXPECT_EQ(one_reply(s.on_line(modern(5, "ping")))["error"]["code"], ec::kMethodNotFound);
  EXPECT_EQ(one_reply(s.on_line(request(6, "ping")))["result"], Json::object());
}

TEST(Modern, VeryLongRequestedVersionIsClipped) {
  Session s = make_session();
  std::string v(10000, '9');
  Json r = one_reply(s.on_line(modern(1, "tools/list", Json::object(),
                                      Json{{"io.modelcontextprotocol/protocolVersion", v}})));
  EXPECT_EQ(r["error"]["code"], ec::kUnsupportedProtocolVersion);
  EXPECT_EQ(r["error"]["data"]["requested"], std::string(253, '9') + "...");
}

}  // namespace
}  // namespace brig::protocol
