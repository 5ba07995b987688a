// tools/list pagination, tools/call validation, the in-flight table:
// completion, cancellation, progress, duplicates, limits.
#include <gtest/gtest.h>

#include <algorithm>

#include "protocol/error_codes.h"
#include "tests/protocol/session_test_util.h"

namespace brig::protocol {
namespace {

using namespace testing;
namespace ec = error_code;

Session ready_session(SessionOptions o = {}) {
  Session s = make_session(o);
  initialize(s, "2025-11-25");
  return s;
}

Call start(Session& s, const Json& id, Json params = Json{{"name", "slow"}}) {
  auto c = calls(s.on_line(request(id, "tools/call", std::move(params))));
  EXPECT_EQ(c.size(), 1u);
  return c.empty() ? Call{} : c[0];
}

std::vector<ToolDescriptor> numbered_tools(int n) {
  std::vector<ToolDescriptor> tools;
  for (int i = 0; i < n; ++i) {
    ToolDescriptor t;
    t.name = "t" + std::to_string(i);
    tools.push_back(t);
  }
  return tools;
}

TEST(ToolsList, FixedOrderAndDescriptorShape) {
  Session s = ready_session();
  EXPECT_EQ(one_reply(s.on_line(request(1, "tools/list"))), Json::parse(R"({
    "jsonrpc":"2.0","id":1,"result":{"tools":[
      {"name":"echo","title":"Echo","description":"Repeats text.",
       "inputSchema":{"type":"object",
         "properties":{"text":{"type":"string"},"times":{"type":"integer","minimum":1}},
         "required":["text"],"additionalProperties":false},
       "annotations":{"readOnlyHint":true}},
      {"name":"slow","description":"Takes its time.","inputSchema":{"type":"object"}}]}})"));
}

TEST(ToolsList, PaginatesWithOpaqueCursor) {
  SessionOptions o;
  o.page_size = 2;
  Session s(ServerInfo{"b", "1"}, "", numbered_tools(5), o);
  initialize(s, "2025-11-25");
  std::vector<std::string> names;
  Json cursor;
  int pages = 0;
  do {
    Json params = cursor.is_null() ? Json::object() : Json{{"cursor", cursor}};
    Json r = one_reply(s.on_line(request(pages, "tools/list", params)))["result"];
    for (const auto& t : r["tools"]) names.push_back(t["name"]);
    cursor = r.contains("nextCursor") ? r["nextCursor"] : Json();
    ++pages;
  } while (!cursor.is_null() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"t0", "t1", "t2", "t3", "t4"}));
}

TEST(ToolsList, ExactPageBoundaryHasNoNextCursor) {
  SessionOptions o;
  o.page_size = 2;
  Session s(ServerInfo{"b", "1"}, "", numbered_tools(2), o);
  initialize(s, "2025-11-25");
  EXPECT_FALSE(one_reply(s.on_line(request(1, "tools/list")))["result"].contains("nextCursor"));
}

TEST(ToolsList, InvalidCursorIsInvalidParams) {
  SessionOptions o;
  o.page_size = 1;
  Session s = ready_session(o);
  Json first = one_reply(s.on_line(request(1, "tools/list")))["result"];
  ASSERT_TRUE(first["nextCursor"].is_string());
  for (Json bad : {Json("garbage"), Json("tools@0"), Json("tools@2"), Json("tools@01"),
                   Json("tools@"), Json("tools@1x"), Json(1), Json::object()}) {
    Json r = one_reply(s.on_line(request(2, "tools/list", Json{{"cursor", bad}})));
    EXPECT_EQ(r, Json::parse(R"({"jsonrpc":"2.0","id":2,"error":{"code":-32602,
        "message":"Invalid params: invalid cursor"}})"))
        << bad;
  }
  Json second =
      one_reply(s.on_line(request(3, "tools/list", Json{{"cursor", first["nextCursor"]}})));
  EXPECT_EQ(second["result"]["tools"][0]["name"], "slow");
}

TEST(ToolsCall, UnknownToolAndBadParamsAreInvalidParams) {
  Session s = ready_session();
  EXPECT_EQ(one_reply(s.on_line(request(1, "tools/call", Json{{"name", "rm"}}))),
            Json::parse(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,
                "message":"Invalid params: unknown tool \"rm\""}})"));
  // Issue 15: "arguments": null was taken for {} (the schema allows an
  // object or no member at all).
  for (Json params :
       {Json(), Json::object(), Json{{"name", 5}}, Json{{"name", "echo"}, {"arguments", "text=hi"}},
        Json{{"name", "echo"}, {"arguments", nullptr}}}) {
    EXPECT_EQ(one_reply(s.on_line(request(2, "tools/call", params)))["error"]["code"],
              ec::kInvalidParams)
        << params;
  }
  EXPECT_TRUE(s.in_flight().empty());
}

// The scanner reads a tools/call whose method comes before its params
// differently (name and arguments outside params) from one whose params
// come first (the general path): both must get the same answers.
TEST(ToolsCall, MemberOrderDoesNotChangeTheOutcome) {
  const std::vector<std::string> params = {
      R"({"name":"echo","arguments":{"text":"hi"}})",
      R"({"arguments":{"text":"hi"},"name":"echo","_meta":{"progressToken":"p"}})",
      R"({"name":"echo","arguments":null})",
      R"({"name":"echo"})",
      R"({"name":"echo","arguments":"text=hi"})",
      R"({"name":"echo","arguments":{"text":1}})",
      R"({"name":"rm"})",
      R"({"name":5})",
      R"({"arguments":{}})",
      R"({})",
  };
  for (std::size_t i = 0; i < params.size(); ++i) {
    SCOPED_TRACE(params[i]);
    Session method_first = ready_session();
    Session params_first = ready_session();
    const std::string id = std::to_string(i);
    auto a = method_first.on_line(R"({"jsonrpc":"2.0","id":)" + id +
                                  R"(,"method":"tools/call","params":)" + params[i] + "}");
    auto b = params_first.on_line(R"({"jsonrpc":"2.0","id":)" + id + R"(,"params":)" + params[i] +
                                  R"(,"method":"tools/call"})");
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (auto* call = std::get_if<Call>(&a[k])) {
        auto* other = std::get_if<Call>(&b[k]);
        ASSERT_TRUE(other);
        EXPECT_EQ(call->tool, other->tool);
        EXPECT_EQ(call->arguments, other->arguments);
        EXPECT_EQ(call->progress_token, other->progress_token);
      } else {
        ASSERT_TRUE(std::holds_alternative<Send>(b[k]));
        EXPECT_EQ(std::get<Send>(a[k]).line, std::get<Send>(b[k]).line);
      }
    }
  }
}

TEST(ToolsCall, InvalidArgumentsAreAnIsErrorResultAndNoCall) {
  Session s = ready_session();
  auto actions = s.on_line(request(
      1, "tools/call", Json{{"name", "echo"}, {"arguments", {{"text", "a"}, {"times", 0}}}}));
  EXPECT_TRUE(calls(actions).empty());
  EXPECT_EQ(one_reply(actions), Json::parse(R"({"jsonrpc":"2.0","id":1,"result":{
      "content":[{"type":"text",
        "text":"invalid arguments for tool echo: arguments.times: must be >= 1, got 0"}],
      "isError":true}})"));
  Json missing = one_reply(s.on_line(request(2, "tools/call", Json{{"name", "echo"}})));
  EXPECT_EQ(missing["result"]["content"][0]["text"],
            "invalid arguments for tool echo: arguments.text: required property missing");
  EXPECT_TRUE(s.in_flight().empty());
}

TEST(ToolsCall, ValidCallIsRunThenAnswered) {
  Session s = ready_session();
  auto actions = s.on_line(
      request("c1", "tools/call", Json{{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
  ASSERT_EQ(actions.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<Call>(actions[0]));
  Call c = std::get<Call>(actions[0]);
  EXPECT_EQ(c.tool, "echo");
  EXPECT_EQ(c.arguments, Json::parse(R"({"text":"hi"})"));
  EXPECT_FALSE(c.progress_token);
  EXPECT_EQ(s.in_flight(), std::vector<CallId>{c.call});
  ToolResult r = ToolResult::text("hi");
  r.structured = Json{{"echoed", "hi"}};
  EXPECT_EQ(one_reply(s.complete(c.call, r)), Json::parse(R"({"jsonrpc":"2.0","id":"c1","result":{
      "content":[{"type":"text","text":"hi"}],"structuredContent":{"echoed":"hi"},
      "isError":false}})"));
  EXPECT_TRUE(s.in_flight().empty());
  EXPECT_TRUE(s.complete(c.call, r).empty());  // answered once only
}

TEST(ToolsCall, MissingArgumentsMeanEmptyObject) {
  Session s = ready_session();
  EXPECT_EQ(start(s, 1).arguments, Json::object());
}

TEST(ToolsCall, ManyInFlightAnsweredInCompletionOrder) {
  Session s = ready_session();
  std::vector<Call> started;
  for (int i = 0; i < 100; ++i) started.push_back(start(s, i));
  auto in_flight = s.in_flight();
  ASSERT_EQ(in_flight.size(), 100u);
  EXPECT_TRUE(std::is_sorted(in_flight.begin(), in_flight.end()));
  for (int i = 99; i >= 0; --i) {
    Json r = one_reply(s.complete(started[i].call, ToolResult::text(std::to_string(i))));
    EXPECT_EQ(r["id"], i);
    EXPECT_EQ(r["result"]["content"][0]["text"], std::to_string(i));
  }
}

TEST(ToolsCall, FailIsInternalError) {
  Session s = ready_session();
  Call c = start(s, 8);
  EXPECT_EQ(one_reply(s.fail(c.call, "handler crashed")),
            Json::parse(R"({"jsonrpc":"2.0","id":8,"error":{"code":-32603,
                "message":"handler crashed"}})"));
  EXPECT_TRUE(s.fail(c.call, "again").empty());
}

TEST(ToolsCall, DuplicateInFlightIdIsRefusedAndOriginalUnaffected) {
  Session s = ready_session();
  Call c = start(s, 5);
  auto dup = s.on_line(request(5, "tools/call", Json{{"name", "slow"}}));
  EXPECT_TRUE(calls(dup).empty());
  EXPECT_EQ(one_reply(dup), Json::parse(R"({"jsonrpc":"2.0","id":5,"error":{"code":-32600,
      "message":"Invalid Request: id 5 is already in flight"}})"));
  // Any request reusing it is refused, not just tools/call.
  EXPECT_EQ(one_reply(s.on_line(request(5, "ping")))["error"]["code"], ec::kInvalidRequest);
  // A string "5" is another id.
  EXPECT_EQ(one_reply(s.on_line(request("5", "ping")))["result"], Json::object());
  EXPECT_EQ(one_reply(s.complete(c.call, ToolResult::text("ok")))["id"], 5);
  start(s, 5);  // free again once answered
}

TEST(ToolsCall, InFlightLimit) {
  SessionOptions o;
  o.max_in_flight_calls = 2;
  Session s = ready_session(o);
  Call a = start(s, 1);
  start(s, 2);
  EXPECT_EQ(one_reply(s.on_line(request(3, "tools/call", Json{{"name", "slow"}}))),
            Json::parse(R"j({"jsonrpc":"2.0","id":3,"error":{"code":-32603,
                "message":"too many tool calls in flight (limit 2)"}})j"));
  s.complete(a.call, ToolResult::text(""));
  start(s, 3);
}

TEST(Cancel, CancelledCallSendsNothingMore) {
  Session s = ready_session();
  Call c = start(s, 1, Json{{"name", "slow"}, {"_meta", {{"progressToken", "tok"}}}});
  ASSERT_TRUE(c.progress_token);
  s.on_line(request(2, "logging/setLevel", Json{{"level", "debug"}}));
  auto actions = s.on_line(
      notification("notifications/cancelled", Json{{"requestId", 1}, {"reason", "user"}}));
  ASSERT_EQ(actions.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<Cancel>(actions[0]));
  EXPECT_EQ(std::get<Cancel>(actions[0]).call, c.call);
  EXPECT_TRUE(s.in_flight().empty());
  EXPECT_FALSE(s.progress(c.call, 1, std::nullopt, ""));
  EXPECT_FALSE(s.log(c.call, LogLevel::emergency, "t", "x"));
  EXPECT_TRUE(s.complete(c.call, ToolResult::text("late")).empty());
  EXPECT_TRUE(s.fail(c.call, "late").empty());
  // A second cancel for the same id is a cancel for an unknown id.
  EXPECT_TRUE(s.on_line(notification("notifications/cancelled", Json{{"requestId", 1}})).empty());
}

TEST(Cancel, IdIsReusableAfterCancel) {
  Session s = ready_session();
  Call first = start(s, 1);
  s.on_line(notification("notifications/cancelled", Json{{"requestId", 1}}));
  Call second = start(s, 1);
  EXPECT_NE(first.call, second.call);
  EXPECT_TRUE(s.complete(first.call, ToolResult::text("old")).empty());
  EXPECT_EQ(
      one_reply(s.complete(second.call, ToolResult::text("new")))["result"]["content"][0]["text"],
      "new");
}

TEST(Cancel, OnlyTheNamedCallAndOnlyByExactId) {
  Session s = ready_session();
  Call a = start(s, 1);
  Call b = start(s, "1");
  auto actions = s.on_line(notification("notifications/cancelled", Json{{"requestId", "1"}}));
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(std::get<Cancel>(actions[0]).call, b.call);
  EXPECT_EQ(s.in_flight(), std::vector<CallId>{a.call});
}

TEST(Cancel, ModernCallsCancelToo) {
  Session s = make_session();
  auto c = calls(s.on_line(modern(1, "tools/call", Json{{"name", "slow"}})));
  ASSERT_EQ(c.size(), 1u);
  auto actions = s.on_line(notification("notifications/cancelled", Json{{"requestId", 1}}));
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<Cancel>(actions[0]));
}

TEST(Progress, OnlyWithTokenAndOnlyIncreasing) {
  Session s = ready_session();
  Call quiet = start(s, 1);
  EXPECT_FALSE(s.progress(quiet.call, 1, 10, "x"));

  Call c = start(s, 2, Json{{"name", "slow"}, {"_meta", {{"progressToken", 77}}}});
  ASSERT_TRUE(c.progress_token);
  EXPECT_EQ(*c.progress_token, Json(77));
  auto p1 = s.progress(c.call, 1, std::nullopt, "");
  ASSERT_TRUE(p1);
  EXPECT_EQ(Json::parse(*p1), Json::parse(R"({"jsonrpc":"2.0","method":"notifications/progress",
      "params":{"progressToken":77,"progress":1.0}})"));
  EXPECT_FALSE(s.progress(c.call, 1, std::nullopt, ""));    // not an increase
  EXPECT_FALSE(s.progress(c.call, 0.5, std::nullopt, ""));  // going back
  auto p2 = s.progress(c.call, 2.5, 10, "halfway");
  ASSERT_TRUE(p2);
  EXPECT_EQ(Json::parse(*p2), Json::parse(R"({"jsonrpc":"2.0","method":"notifications/progress",
      "params":{"progressToken":77,"progress":2.5,"total":10.0,"message":"halfway"}})"));
  s.complete(c.call, ToolResult::text("done"));
  EXPECT_FALSE(s.progress(c.call, 3, std::nullopt, ""));  // nothing after the response
}

TEST(Progress, ModernTokenFromMeta) {
  Session s = make_session();
  auto c = calls(
      s.on_line(modern(1, "tools/call", Json{{"name", "slow"}}, Json{{"progressToken", "p"}})));
  ASSERT_EQ(c.size(), 1u);
  auto p = s.progress(c[0].call, 1, std::nullopt, "");
  ASSERT_TRUE(p);
  EXPECT_EQ(Json::parse(*p)["params"]["progressToken"], "p");
}

TEST(Outgoing, OversizedResultBecomesIsErrorNamingSizeAndLimit) {
  SessionOptions o;
  o.max_outgoing_bytes = 64 << 10;
  Session s = ready_session(o);
  Call c = start(s, 1);
  auto actions = s.complete(c.call, ToolResult::text(std::string(100000, 'x')));
  ASSERT_EQ(actions.size(), 1u);
  const std::string& line = std::get<Send>(actions[0]).line;
  EXPECT_LE(line.size(), 64u << 10);
  EXPECT_EQ(Json::parse(line), Json::parse(R"({"jsonrpc":"2.0","id":1,"result":{
      "content":[{"type":"text","text":"result too large to send: 100089 bytes, over the 65536-byte limit on outgoing messages"}],
      "isError":true}})"));
}

TEST(Outgoing, ResultAtTheLimitIsSentWhole) {
  SessionOptions o;
  o.max_outgoing_bytes = 64 << 10;
  Session s = ready_session(o);
  Call c = start(s, 1);
  // {"id":1,"jsonrpc":"2.0","result":{"content":[{"text":"...","type":"text"}],"isError":false}}
  const std::size_t overhead = 89;
  auto line = std::get<Send>(
                  s.complete(c.call, ToolResult::text(std::string((64 << 10) - overhead, 'x')))[0])
                  .line;
  EXPECT_EQ(line.size(), 64u << 10);
  EXPECT_EQ(Json::parse(line)["result"]["isError"], false);
}

TEST(Outgoing, MinimumLimitIs64KiB) {
  SessionOptions o;
  o.max_outgoing_bytes = 10;
  EXPECT_EQ(make_session(o).options().max_outgoing_bytes, 64u << 10);
}

TEST(Outgoing, InvalidUtf8InResultIsRepaired) {
  Session s = ready_session();
  Call c = start(s, 1);
  Json r = one_reply(s.complete(c.call, ToolResult::text("bad \xff byte")));
  EXPECT_EQ(r["result"]["content"][0]["text"], "bad \xEF\xBF\xBD byte");
}

TEST(Outgoing, OversizedLogAndProgressStayUnderTheLimit) {
  SessionOptions o;
  o.max_outgoing_bytes = 64 << 10;
  Session s = ready_session(o);
  s.on_line(request(0, "logging/setLevel", Json{{"level", "debug"}}));
  auto log = s.log(std::nullopt, LogLevel::info, "t", std::string(70000, 'l'));
  ASSERT_TRUE(log);
  EXPECT_EQ(Json::parse(*log)["params"]["data"].get<std::string>(),
            "log message too large to send: 70099 bytes, over the 65536-byte limit on outgoing "
            "messages");
  Call c = start(s, 1, Json{{"name", "slow"}, {"_meta", {{"progressToken", 1}}}});
  auto p = s.progress(c.call, 1, std::nullopt, std::string(70000, 'p'));
  ASSERT_TRUE(p);
  EXPECT_FALSE(Json::parse(*p)["params"].contains("message"));
}

}  // namespace
}  // namespace brig::protocol
