// Helpers for driving a protocol::Session in tests: canned catalogue, request
// builders and action inspection.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/session.h"

namespace brig::protocol::testing {

// "echo" {text: string (required), times: integer >= 1}, "slow" {}, in that order.
std::vector<ToolDescriptor> test_tools();

// A session serving test_tools() with name "brig-test" 1.2.3 and instructions "Use echo.".
Session make_session(SessionOptions options = {});

// A JSON-RPC request line without _meta (legacy unless params._meta says otherwise).
std::string request(const Json& id, std::string_view method, Json params = Json());
// A 2026-07-28 request line: params._meta carries protocolVersion and
// clientCapabilities, plus extra_meta's members.
std::string modern(const Json& id, std::string_view method, Json params = Json::object(),
                   Json extra_meta = Json::object());
// A notification line.
std::string notification(std::string_view method, Json params = Json());

// Sends initialize for version and returns the parsed response.
Json initialize(Session& s, std::string_view version);

// The Send actions, parsed.
std::vector<Json> sent(const std::vector<Action>& actions);
// The Call actions.
std::vector<Call> calls(const std::vector<Action>& actions);
// The one action, which must be a Send, parsed (test fails otherwise; null then).
Json one_reply(const std::vector<Action>& actions);

}  // namespace brig::protocol::testing
