#include "protocol/json_rpc.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_set>

#include "protocol/error_codes.h"

namespace brig::protocol {
namespace {

namespace ec = error_code;

// The error decode_message() gives for a line, as the JSON that would be sent.
Json decode_error(std::string_view line) {
  auto parsed = parse_line(line);
  if (!parsed) return to_json(parsed.error());
  auto m = decode_message(*parsed);
  if (m) return Json{{"decoded", true}};
  return to_json(m.error());
}

TEST(Id, IntegerAndStringRoundTrip) {
  EXPECT_EQ(Id::from_json(Json(7))->to_json(), Json(7));
  EXPECT_EQ(Id::from_json(Json(-7))->to_json(), Json(-7));
  EXPECT_EQ(Id::from_json(Json("x"))->to_json(), Json("x"));
  EXPECT_EQ(Id::from_json(Json(9223372036854775807LL))->to_json(), Json(9223372036854775807LL));
  EXPECT_EQ(Id(7).to_string(), "7");
  EXPECT_EQ(Id("7").to_string(), "\"7\"");
}

TEST(Id, IntegerAndStringAreDistinct) {
  EXPECT_NE(Id(1), Id("1"));
  std::unordered_set<Id> ids{Id(1), Id("1"), Id(1)};
  EXPECT_EQ(ids.size(), 2u);
}

TEST(Id, RejectsNullFloatBoolObjectHugeAndOverlong) {
  EXPECT_FALSE(Id::from_json(Json(nullptr)));
  EXPECT_FALSE(Id::from_json(Json(1.5)));
  EXPECT_FALSE(Id::from_json(Json::parse("1.0")));
  EXPECT_FALSE(Id::from_json(Json(true)));
  EXPECT_FALSE(Id::from_json(Json::object()));
  EXPECT_FALSE(Id::from_json(Json::array()));
  EXPECT_FALSE(Id::from_json(Json(18446744073709551615ULL)));
  EXPECT_TRUE(Id::from_json(Json(std::string(kMaxIdBytes, 'a'))));
  EXPECT_FALSE(Id::from_json(Json(std::string(kMaxIdBytes + 1, 'a'))));
}

TEST(Decode, Request) {
  auto m = decode_message(Json::parse(R"({"jsonrpc":"2.0","id":3,"method":"ping","params":{}})"));
  ASSERT_TRUE(m);
  auto* r = std::get_if<Request>(&*m);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->id, Id(3));
  EXPECT_EQ(r->method, "ping");
  EXPECT_EQ(r->params, Json::object());
}

TEST(Decode, NotificationHasNoId) {
  auto m = decode_message(Json::parse(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  ASSERT_TRUE(m);
  auto* n = std::get_if<Notification>(&*m);
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(n->params.is_null());
}

TEST(Decode, ArrayParamsAreValidJsonRpc) {
  auto m = decode_message(Json::parse(R"({"jsonrpc":"2.0","id":"a","method":"x","params":[1]})"));
  ASSERT_TRUE(m);
  EXPECT_EQ(std::get<Request>(*m).params, Json::parse("[1]"));
}

TEST(Decode, ResponsesFromClient) {
  auto ok = decode_message(Json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  ASSERT_TRUE(ok);
  EXPECT_TRUE(std::holds_alternative<Response>(*ok));
  auto err = decode_message(
      Json::parse(R"({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no","data":[1]}})"));
  ASSERT_TRUE(err);
  auto& e = std::get<ErrorResponse>(*err);
  EXPECT_EQ(e.code, -1);
  EXPECT_EQ(e.data, Json::parse("[1]"));
}

TEST(Decode, UnparseableLineIsParseErrorWithoutId) {
  Json e = decode_error(R"({"jsonrpc":"2.0","id":1,"method":)");
  EXPECT_FALSE(e.contains("id"));
  EXPECT_EQ(e["jsonrpc"], "2.0");
  EXPECT_EQ(e["error"]["code"], ec::kParseError);
  EXPECT_EQ(e["error"]["message"], "Parse error");
  EXPECT_TRUE(e["error"]["data"]["detail"].is_string());
}

TEST(Decode, BinaryGarbageIsParseError) {
  std::string garbage;
  for (int i = 0; i < 512; ++i) garbage.push_back(static_cast<char>((i * 151 + 7) & 0xFF));
  Json e = decode_error(garbage);
  EXPECT_EQ(e["error"]["code"], ec::kParseError);
  EXPECT_FALSE(e.contains("id"));
  // The detail quotes the garbage; encoding the reply must still work.
  EXPECT_NO_THROW(encode(e));
}

TEST(Decode, InvalidUtf8InsideStringIsParseError) {
  Json e = decode_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\"}");
  EXPECT_EQ(e["error"]["code"], ec::kParseError);
}

TEST(Decode, NonObjectIsInvalidRequest) {
  for (auto line : {"5", "\"ping\"", "null", "true"}) {
    Json e = decode_error(line);
    EXPECT_EQ(e["error"]["code"], ec::kInvalidRequest) << line;
    EXPECT_FALSE(e.contains("id")) << line;
  }
}

TEST(Decode, MissingOrWrongJsonrpcIsInvalidRequestWithId) {
  Json missing = decode_error(R"({"id":4,"method":"ping"})");
  EXPECT_EQ(missing["error"]["code"], ec::kInvalidRequest);
  EXPECT_EQ(missing["id"], 4);
  Json wrong = decode_error(R"({"jsonrpc":"1.0","id":"x","method":"ping"})");
  EXPECT_EQ(wrong["error"]["code"], ec::kInvalidRequest);
  EXPECT_EQ(wrong["id"], "x");
  Json number = decode_error(R"({"jsonrpc":2.0,"id":1,"method":"ping"})");
  EXPECT_EQ(number["error"]["code"], ec::kInvalidRequest);
}

TEST(Decode, NullIdIsInvalidRequestAndReplyHasNoId) {
  Json e = decode_error(R"({"jsonrpc":"2.0","id":null,"method":"ping"})");
  EXPECT_EQ(e["error"]["code"], ec::kInvalidRequest);
  EXPECT_EQ(e["error"]["message"], "Invalid Request: id must not be null");
  EXPECT_FALSE(e.contains("id"));
}

TEST(Decode, FloatBoolAndObjectIdsAreInvalidRequest) {
  for (auto id : {"1.5", "true", "{}", "[1]", "18446744073709551615"}) {
    Json e = decode_error(std::string(R"({"jsonrpc":"2.0","method":"ping","id":)") + id + "}");
    EXPECT_EQ(e["error"]["code"], ec::kInvalidRequest) << id;
    EXPECT_FALSE(e.contains("id")) << id;
  }
}

TEST(Decode, OverlongStringIdIsInvalidRequestWithoutEcho) {
  std::string id(kMaxIdBytes + 1, 'i');
  Json e = decode_error(R"({"jsonrpc":"2.0","method":"ping","id":")" + id + "\"}");
  EXPECT_EQ(e["error"]["code"], ec::kInvalidRequest);
  EXPECT_FALSE(e.contains("id"));
}

TEST(Decode, WrongTypesAreInvalidRequest) {
  Json method = decode_error(R"({"jsonrpc":"2.0","id":1,"method":5})");
  EXPECT_EQ(method["error"]["code"], ec::kInvalidRequest);
  EXPECT_EQ(method["id"], 1);
  for (auto params : {"5", "\"s\"", "true", "null"}) {
    Json e = decode_error(std::string(R"({"jsonrpc":"2.0","id":1,"method":"x","params":)") +
                          params + "}");
    EXPECT_EQ(e["error"]["code"], ec::kInvalidRequest) << params;
    EXPECT_EQ(e["id"], 1) << params;
  }
}

TEST(Decode, NeitherMethodNorResultIsInvalidRequest) {
  Json e = decode_error(R"({"jsonrpc":"2.0","id":9})");
  EXPECT_EQ(e["error"]["code"], ec::kInvalidRequest);
  EXPECT_EQ(e["id"], 9);
}

TEST(Decode, MalformedResponseIsInvalidRequestWithoutId) {
  for (auto line :
       {R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}})",
        R"({"jsonrpc":"2.0","result":1})", R"({"jsonrpc":"2.0","id":1,"error":"bad"})"}) {
    Json e = decode_error(line);
    EXPECT_EQ(e["error"]["code"], ec::kInvalidRequest) << line;
    EXPECT_FALSE(e.contains("id")) << line;
  }
}

TEST(Depth, PreScanCountsOnlyStructure) {
  EXPECT_EQ(nesting_depth("{}", 64), 1u);
  EXPECT_EQ(nesting_depth(R"({"a":[[1],{"b":[]}]})", 64), 4u);
  EXPECT_EQ(nesting_depth(R"({"a":"[[[[{{{{"})", 64), 1u);
  EXPECT_EQ(nesting_depth(R"({"a":"\"[[[["})", 64), 1u);  // escaped quote keeps the string open
  EXPECT_EQ(nesting_depth(R"(["\\",[[]]])", 64), 3u);     // escaped backslash then real quote
  EXPECT_EQ(nesting_depth("[[[[[", 3), 4u);               // stops at limit + 1
}

TEST(Depth, AtLimitParsesAndDeeperIsInvalidRequest) {
  std::string at_limit =
      std::string(kDefaultMaxNestingDepth, '[') + std::string(kDefaultMaxNestingDepth, ']');
  EXPECT_TRUE(parse_line(at_limit));
  std::string deeper = "[" + at_limit + "]";
  auto e = parse_line(deeper);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, ec::kInvalidRequest);
  EXPECT_FALSE(e.error().id);
  EXPECT_EQ(e.error().message, "Invalid Request: JSON nested deeper than 64 levels");
}

TEST(Depth, HundredThousandLevelsDoNotCrash) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto e = parse_line(deep);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, ec::kInvalidRequest);
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  EXPECT_FALSE(parse_line(objects));
  EXPECT_FALSE(parse_line(std::string(100000, '[')));  // unbalanced too
}

TEST(Encode, ErrorWithoutIdLeavesIdOut) {
  EXPECT_EQ(encode(to_json(make_error(std::nullopt, -32700, "Parse error"))),
            R"({"error":{"code":-32700,"message":"Parse error"},"jsonrpc":"2.0"})");
  EXPECT_EQ(encode(to_json(make_error(Id("a"), -32601, "m", Json{{"k", 1}}))),
            R"({"error":{"code":-32601,"data":{"k":1},"message":"m"},"id":"a","jsonrpc":"2.0"})");
}

// Members come out in sorted key order (nlohmann::json's std::map).
TEST(Encode, MessagesHaveJsonrpcAndOmitAbsentParams) {
  EXPECT_EQ(encode(to_json(Notification{"n", Json()})), R"({"jsonrpc":"2.0","method":"n"})");
  EXPECT_EQ(encode(to_json(Request{Id(1), "m", Json{{"x", 1}}})),
            R"({"id":1,"jsonrpc":"2.0","method":"m","params":{"x":1}})");
  EXPECT_EQ(encode(to_json(Response{Id(2), Json::object()})),
            R"({"id":2,"jsonrpc":"2.0","result":{}})");
}

TEST(Encode, ResponseWithoutEnvelopeIsTheSameBytes) {
  const Json result{{"content", Json::array({Json{{"type", "text"}, {"text", "a \"b\"\n"}}})},
                    {"isError", false}};
  for (const Id& id : {Id(std::int64_t{0}), Id(-7), Id("r\u00e9q \"1\"")}) {
    EXPECT_EQ(encode_response(id, result), encode(to_json(Response{id, result}))) << id.to_string();
  }
}

TEST(Encode, InvalidUtf8IsReplacedNotThrown) {
  Json j{{"text", std::string("ok \xff\xfe end \xc3")}};
  std::string out;
  ASSERT_NO_THROW(out = encode(j));
  EXPECT_EQ(out, "{\"text\":\"ok \xEF\xBF\xBD\xEF\xBF\xBD end \xEF\xBF\xBD\"}");
  EXPECT_TRUE(parse_line(out));  // what we send is valid JSON
}

TEST(Encode, IsOneLine) {
  std::string out = encode(Json{{"t", "a\nb\r\n"}});
  EXPECT_EQ(out.find('\n'), std::string::npos);
  EXPECT_EQ(out, R"({"t":"a\nb\r\n"})");
}

}  // namespace
}  // namespace brig::protocol
