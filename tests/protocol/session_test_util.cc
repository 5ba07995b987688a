#include "tests/protocol/session_test_util.h"

#include <gtest/gtest.h>

namespace brig::protocol::testing {

std::vector<ToolDescriptor> test_tools() {
  ToolDescriptor echo;
  echo.name = "echo";
  echo.title = "Echo";
  echo.description = "Repeats text.";
  echo.input_schema = Json::parse(R"({"type":"object",
      "properties":{"text":{"type":"string"},"times":{"type":"integer","minimum":1}},
      "required":["text"],"additionalProperties":false})");
  echo.annotations = Json{{"readOnlyHint", true}};
  ToolDescriptor slow;
  slow.name = "slow";
  slow.description = "Takes its time.";
  return {echo, slow};
}

Session make_session(SessionOptions options) {
  return Session(ServerInfo{"brig-test", "1.2.3"}, "Use echo.", test_tools(), options);
}

std::string request(const Json& id, std::string_view method, Json params) {
  Json j{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) j["params"] = std::move(params);
  return j.dump();
}

std::string modern(const Json& id, std::string_view method, Json params, Json extra_meta) {
  Json meta{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", Json::object()},
            {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "0"}}}};
  meta.update(extra_meta);
  params["_meta"] = std::move(meta);
  return request(id, method, std::move(params));
}

std::string notification(std::string_view method, Json params) {
  Json j{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) j["params"] = std::move(params);
  return j.dump();
}

Json initialize(Session& s, std::string_view version) {
  Json reply =
      one_reply(s.on_line(request(0, "initialize",
                                  Json{{"protocolVersion", version},
                                       {"capabilities", Json::object()},
                                       {"clientInfo", {{"name", "test"}, {"version", "0"}}}})));
  EXPECT_TRUE(s.on_line(notification("notifications/initialized")).empty());
  return reply;
}

std::vector<Json> sent(const std::vector<Action>& actions) {
  std::vector<Json> out;
  for (const auto& a : actions) {
    if (const auto* send = std::get_if<Send>(&a)) {
      EXPECT_EQ(send->line.find('\n'), std::string::npos);
      out.push_back(Json::parse(send->line));
    }
  }
  return out;
}

std::vector<Call> calls(const std::vector<Action>& actions) {
  std::vector<Call> out;
  for (const auto& a : actions) {
    if (const auto* c = std::get_if<Call>(&a)) out.push_back(*c);
  }
  return out;
}

Json one_reply(const std::vector<Action>& actions) {
  EXPECT_EQ(actions.size(), 1u);
  if (actions.size() != 1 || !std::holds_alternative<Send>(actions[0])) {
    ADD_FAILURE() << "expected exactly one Send";
    return Json();
  }
  return Json::parse(std::get<Send>(actions[0]).line);
}

}  // namespace brig::protocol::testing
