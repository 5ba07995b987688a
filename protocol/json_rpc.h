// JSON-RPC 2.0 messages as values, and the checks that turn one incoming line
// into them. Pure: no I/O. Nothing here throws on any input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace brig::protocol {

using Json = nlohmann::json;

// Incoming JSON nested deeper than this (arrays and objects, counted through a
// string-aware pre-scan before nlohmann sees the text) is refused with -32600.
// 64 leaves room for any real tool argument, and keeps every later recursive
// copy or dump of the value far from the stack limit.
inline constexpr std::size_t kDefaultMaxNestingDepth = 64;

// String ids longer than this are refused (-32600, no id): every response
// echoes its id, and a megabyte id would make even an error too big to send.
inline constexpr std::size_t kMaxIdBytes = 4096;

// A JSON-RPC request id: an integer (int64) or a string, never null or a float.
class Id {
 public:
  Id(std::int64_t n) : value_(n) {}
  Id(std::string s) : value_(std::move(s)) {}
  Id(const char* s) : value_(std::string(s)) {}

  // The id from a JSON value; empty for null, floats, booleans, objects,
  // arrays, integers beyond int64 and strings longer than kMaxIdBytes.
  static std::optional<Id> from_json(const Json& j);
  // The id as JSON, same type it arrived as.
  Json to_json() const;
  // For messages and logs: 7 or "abc" (strings quoted, as in JSON).
  std::string to_string() const;

  bool is_integer() const { return std::holds_alternative<std::int64_t>(value_); }
  const std::variant<std::int64_t, std::string>& value() const { return value_; }

  friend bool operator==(const Id&, const Id&) = default;
  friend auto operator<=>(const Id&, const Id&) = default;

 private:
  std::variant<std::int64_t, std::string> value_;
};

// The "name" and "arguments" of a tools/call, read by the fast scanner
// (request_scan.h) straight into these instead of into params: building them
// into params' JSON object, only for tools/call to take them out again, cost
// an object, two members and the name's string on every call.
struct ToolCallParams {
  std::optional<std::string> name;  // a string "name", when there is one
  std::optional<Json> arguments;    // "arguments" as sent, when there is one
};

// A call that expects a response. params: an object or array, or null when
// absent. With tool_call set (a tools/call from the scanner), params holds
// the members other than "name" and "arguments" (null when there are none).
struct Request {
  Id id;
  std::string method;
  Json params;
  std::optional<ToolCallParams> tool_call = std::nullopt;
};

// A call that never gets a response. params as in Request.
struct Notification {
  std::string method;
  Json params;
};

// A successful response (clients send these only to answer server requests;
// brig makes none, so it ignores them).
struct Response {
  Id id;
  Json result;
};

// An error response. id is empty when the request's id could not be read;
// the member is then left out of the encoding (not "id": null).
struct ErrorResponse {
  std::optional<Id> id;
  int code = 0;
  std::string message;
  std::optional<Json> data;  // empty: no "data" member
};

using Message = std::variant<Request, Notification, Response, ErrorResponse>;

// Parses one framed line (no newline) into JSON. Failure is the ErrorResponse
// to send: -32600 when nested deeper than max_depth, -32700 when not JSON
// (including invalid UTF-8). Both carry no id.
std::expected<Json, ErrorResponse> parse_line(std::string_view line,
                                              std::size_t max_depth = kDefaultMaxNestingDepth);

// Depth of the deepest array/object nesting in text, brackets inside strings
// not counted; stops counting once it passes limit (returns limit + 1). Text
// that is not JSON still gets a number: parse_line decides validity.
std::size_t nesting_depth(std::string_view text, std::size_t limit);

// Checks one JSON value (a single message or one batch element) against
// JSON-RPC 2.0. Failure is the ErrorResponse to send: -32600 for a non-object,
// missing or wrong "jsonrpc", a null/float/bool/object id, a non-string method,
// params neither object nor array, or a response without exactly one of
// result/error. The error carries the id when one was readable.
std::expected<Message, ErrorResponse> decode_message(const Json& j);
// Same, moving params and result out of j instead of copying them.
std::expected<Message, ErrorResponse> decode_message(Json&& j);

// An ErrorResponse; data empty means no "data" member.
ErrorResponse make_error(std::optional<Id> id, int code, std::string message,
                         std::optional<Json> data = std::nullopt);
// The -32602 answer to req: "Invalid params: " + why.
ErrorResponse invalid_params(const Request& req, std::string why);

// The wire form of each message type ({"jsonrpc":"2.0", ...}).
Json to_json(const Request& m);
Json to_json(const Notification& m);
Json to_json(const Response& m);
// Same, moving the result in: a tool result can hold megabytes of text.
Json to_json(Response&& m);
Json to_json(const ErrorResponse& m);

// Compact one-line JSON text, the bytes j.dump(-1, ' ', false,
// error_handler_t::replace) gives (see json_encode.h). Never throws: invalid
// UTF-8 in strings becomes U+FFFD. No trailing newline, but capacity for one.
std::string encode(const Json& j);
// encode(to_json(Response{id, result})), without building the envelope.
std::string encode_response(const Id& id, const Json& result);

}  // namespace brig::protocol

template <>
struct std::hash<brig::protocol::Id> {
  std::size_t operator()(const brig::protocol::Id& id) const noexcept {
    return std::hash<std::variant<std::int64_t, std::string>>{}(id.value());
  }
};
