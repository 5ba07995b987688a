// JSON-RPC batches: only for 2025-03-26, answered as one array once every
// call in them is done.
#include <gtest/gtest.h>

#include "protocol/error_codes.h"
#include "tests/protocol/session_test_util.h"

namespace brig::protocol {
namespace {

using namespace testing;
namespace ec = error_code;

std::string batch(std::initializer_list<std::string> members) {
  std::string s = "[";
  for (const auto& m : members) s += (s.size() > 1 ? "," : "") + m;
  return s + "]";
}

Session batch_session(SessionOptions o = {}) {
  Session s = make_session(o);
  initialize(s, "2025-03-26");
  return s;
}

class EachVersion : public ::testing::TestWithParam<const char*> {};

TEST_P(EachVersion, BatchesOnlyIn20250326) {
  Session s = make_session();
  initialize(s, GetParam());
  Json r = one_reply(s.on_line(batch({request(1, "ping"), request(2, "ping")})));
  if (std::string_view(GetParam()) == "2025-03-26") {
    EXPECT_EQ(r, Json::parse(R"([{"jsonrpc":"2.0","id":1,"result":{}},
                                 {"jsonrpc":"2.0","id":2,"result":{}}])"));
  } else {
    EXPECT_EQ(r, Json::parse(std::string(R"({"jsonrpc":"2.0","error":{"code":-32600,
        "message":"Invalid Request: JSON-RPC batches are not part of protocol version )") +
                             GetParam() + "\"}}"));
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, EachVersion,
                         ::testing::Values("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"));

TEST(Batch, RefusedBeforeInitializeAndForModernOnlyClients) {
  Session s = make_session();
  Json r = one_reply(s.on_line(batch({modern(1, "tools/list")})));
  EXPECT_EQ(r["error"]["code"], ec::kInvalidRequest);
  EXPECT_FALSE(r.contains("id"));
}

TEST(Batch, EmptyBatchIsInvalidRequest) {
  Session s = batch_session();
  EXPECT_EQ(one_reply(s.on_line("[]")), Json::parse(R"({"jsonrpc":"2.0","error":{"code":-32600,
      "message":"Invalid Request: empty batch"}})"));
}

TEST(Batch, TooManyMembersIsOneError) {
  SessionOptions o;
  o.max_batch_size = 2;
  Session s = batch_session(o);
  Json r =
      one_reply(s.on_line(batch({request(1, "ping"), request(2, "ping"), request(3, "ping")})));
  EXPECT_EQ(r["error"]["message"], "Invalid Request: batch of 3 messages, over the limit of 2");
}

TEST(Batch, InvalidMembersAreAnsweredInsideTheArray) {
  Session s = batch_session();
  Json r = one_reply(s.on_line(
      batch({"1", R"({"jsonrpc":"2.0","id":null,"method":"ping"})", request(3, "nope"),
             notification("notifications/x"), R"({"jsonrpc":"2.0","id":9,"result":{}})"})));
  EXPECT_EQ(r, Json::parse(R"([
    {"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: a message must be a JSON object"}},
    {"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: id must not be null"}},
    {"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: nope"}}])"));
}

TEST(Batch, OnlyNotificationsGetNoReply) {
  Session s = batch_session();
  EXPECT_TRUE(s.on_line(batch({notification("notifications/initialized"),
                               notification("notifications/cancelled", Json{{"requestId", 4}})}))
                  .empty());
}

TEST(Batch, ResponseWaitsForEveryCall) {
  Session s = batch_session();
  auto actions =
      s.on_line(batch({request(1, "tools/call", Json{{"name", "slow"}}), request(2, "ping"),
                       request(3, "tools/call", Json{{"name", "slow"}})}));
  auto started = calls(actions);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_TRUE(sent(actions).empty());
  EXPECT_TRUE(s.complete(started[1].call, ToolResult::text("three")).empty());
  Json r = one_reply(s.complete(started[0].call, ToolResult::text("one")));
  EXPECT_EQ(r, Json::parse(R"([
    {"jsonrpc":"2.0","id":2,"result":{}},
    {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"three"}],"isError":false}},
    {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"one"}],"isError":false}}])"));
}

TEST(Batch, CancelledMemberIsLeftOutAndCanCompleteTheBatch) {
  Session s = batch_session();
  auto started = calls(
      s.on_line(batch({request(1, "tools/call", Json{{"name", "slow"}}), request(2, "ping")})));
  ASSERT_EQ(started.size(), 1u);
  auto actions = s.on_line(notification("notifications/cancelled", Json{{"requestId", 1}}));
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(std::get<Cancel>(actions[0]).call, started[0].call);
  EXPECT_EQ(Json::parse(std::get<Send>(actions[1]).line),
            Json::parse(R"([{"jsonrpc":"2.0","id":2,"result":{}}])"));
  EXPECT_TRUE(s.complete(started[0].call, ToolResult::text("late")).empty());
}

TEST(Batch, AllMembersCancelledSendsNothing) {
  Session s = batch_session();
  auto started = calls(s.on_line(batch({request(1, "tools/call", Json{{"name", "slow"}})})));
  ASSERT_EQ(started.size(), 1u);
  auto actions = s.on_line(notification("notifications/cancelled", Json{{"requestId", 1}}));
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<Cancel>(actions[0]));
}

TEST(Batch, CancelInsideTheSameBatch) {
  Session s = batch_session();
  auto actions = s.on_line(
      batch({request(1, "tools/call", Json{{"name", "slow"}}),
             notification("notifications/cancelled", Json{{"requestId", 1}}), request(2, "ping")}));
  ASSERT_EQ(actions.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<Call>(actions[0]));
  EXPECT_TRUE(std::holds_alternative<Cancel>(actions[1]));
  EXPECT_EQ(Json::parse(std::get<Send>(actions[2]).line),
            Json::parse(R"([{"jsonrpc":"2.0","id":2,"result":{}}])"));
}

TEST(Batch, DuplicateIdInsideABatch) {
  Session s = batch_session();
  auto actions = s.on_line(batch({request(1, "tools/call", Json{{"name", "slow"}}),
                                  request(1, "tools/call", Json{{"name", "slow"}})}));
  auto started = calls(actions);
  ASSERT_EQ(started.size(), 1u);
  Json r = one_reply(s.complete(started[0].call, ToolResult::text("ok")));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["error"]["code"], ec::kInvalidRequest);
  EXPECT_EQ(r[1]["result"]["content"][0]["text"], "ok");
}

TEST(Batch, FailedMemberIsAnErrorInTheArray) {
  Session s = batch_session();
  auto started = calls(s.on_line(batch({request(1, "tools/call", Json{{"name", "slow"}})})));
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(one_reply(s.fail(started[0].call, "boom")),
            Json::parse(R"([{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}])"));
}

TEST(Batch, OversizedArrayReplacesLargestMembersFirst) {
  SessionOptions o;
  o.max_outgoing_bytes = 64 << 10;
  Session s = batch_session(o);
  auto started = calls(s.on_line(batch({request(1, "tools/call", Json{{"name", "slow"}}),
                                        request(2, "tools/call", Json{{"name", "slow"}})})));
  ASSERT_EQ(started.size(), 2u);
  s.complete(started[0].call, ToolResult::text(std::string(40000, 'a')));  // fits alone
  auto actions = s.complete(started[1].call, ToolResult::text(std::string(30000, 'b')));
  ASSERT_EQ(actions.size(), 1u);
  const std::string& line = std::get<Send>(actions[0]).line;
  EXPECT_LE(line.size(), 64u << 10);
  Json r = Json::parse(line);
  ASSERT_EQ(r.size(), 2u);
  // The 40000-byte member was swapped for a stand-in; the smaller one stayed.
  EXPECT_EQ(r[0]["id"], 1);
  EXPECT_EQ(r[0]["result"]["isError"], true);
  EXPECT_EQ(r[1]["result"]["content"][0]["text"], std::string(30000, 'b'));
}

}  // namespace
}  // namespace brig::protocol
