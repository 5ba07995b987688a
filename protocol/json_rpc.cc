#include "protocol/json_rpc.h"

#include <limits>

#include "protocol/error_codes.h"
#include "protocol/json_encode.h"
#include "protocol/text.h"

namespace brig::protocol {

std::optional<Id> Id::from_json(const Json& j) {
  if (j.is_number_integer()) {
    if (j.is_number_unsigned()) {
      // nlohmann stores every non-negative integer as unsigned.
      auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return std::nullopt;
      }
      return Id(static_cast<std::int64_t>(u));
    }
    return Id(j.get<std::int64_t>());
  }
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s.size() > kMaxIdBytes) return std::nullopt;
    return Id(s);
  }
  return std::nullopt;
}

Json Id::to_json() const {
  if (const auto* n = std::get_if<std::int64_t>(&value_)) return Json(*n);
  return Json(std::get<std::string>(value_));
}

std::string Id::to_string() const {
  return encode(to_json());
}

std::size_t nesting_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character can be a quote: never ends the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > deepest) {
          deepest = depth;
          if (deepest > limit) return limit + 1;
        }
        break;
      case ']':
      case '}':
        // Unbalanced closers are a parse error for nlohmann to report.
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return deepest;
}

std::expected<Json, ErrorResponse> parse_line(std::string_view line, std::size_t max_depth) {
  // Counted before parsing: nlohmann parses deep input fine but copying or
  // destroying tens of thousands of levels later overflows the stack.
  if (nesting_depth(line, max_depth) > max_depth) {
    return std::unexpected(make_error(
        std::nullopt, error_code::kInvalidRequest,
        "Invalid Request: JSON nested deeper than " + std::to_string(max_depth) + " levels"));
  }
  try {
    return Json::parse(line);
  } catch (const Json::exception& e) {
    // The exception text names the position and the offending token, which is
    // what a person debugging a client needs; it is repaired and shortened.
    return std::unexpected(make_error(std::nullopt, error_code::kParseError, "Parse error",
                                      Json{{"detail", clip(e.what(), 256)}}));
  }
}

namespace {

ErrorResponse invalid(std::optional<Id> id, std::string why) {
  return make_error(std::move(id), error_code::kInvalidRequest, "Invalid Request: " + why);
}

// A response sent to us: accepted only when well formed, so that what the
// session ignores is exactly a response and nothing else.
std::expected<Message, ErrorResponse> decode_response(Json& j, std::optional<Id> id) {
  bool has_result = j.contains("result");
  bool has_error = j.contains("error");
  // The reply to a malformed response leaves out the id: it belongs to the
  // server's id space, and echoing it could match one of the client's own
  // pending requests.
  if (has_result && has_error) return std::unexpected(invalid({}, "both result and error"));
  if (has_result) {
    if (!id) return std::unexpected(invalid({}, "response without a valid id"));
    return Response{*id, std::move(j["result"])};
  }
  const Json& err = j["error"];
  if (!err.is_object() || !err.contains("code") || !err["code"].is_number_integer() ||
      !err.contains("message") || !err["message"].is_string()) {
    return std::unexpected(invalid({}, "error member must be {code: integer, message: string}"));
  }
  if (j.contains("id") && !j["id"].is_null() && !id) {
    return std::unexpected(invalid({}, "error response with an invalid id"));
  }
  ErrorResponse e{id, err["code"].get<int>(), err["message"].get<std::string>(), std::nullopt};
  if (err.contains("data")) e.data = err["data"];
  return e;
}

std::expected<Message, ErrorResponse> decode(Json& j) {
  if (!j.is_object()) return std::unexpected(invalid({}, "a message must be a JSON object"));
  std::optional<Id> id;
  if (auto it = j.find("id"); it != j.end()) id = Id::from_json(*it);

  auto version = j.find("jsonrpc");
  if (version == j.end()) return std::unexpected(invalid(id, "missing \"jsonrpc\": \"2.0\""));
  if (!version->is_string() || version->get_ref<const std::string&>() != "2.0") {
    return std::unexpected(invalid(id, "\"jsonrpc\" must be \"2.0\""));
  }

  auto method = j.find("method");
  if (method == j.end()) {
    if (j.contains("result") || j.contains("error")) return decode_response(j, id);
    return std::unexpected(invalid(id, "no method, result or error"));
  }
  if (!method->is_string()) return std::unexpected(invalid(id, "method must be a string"));

  Json params;  // null: absent
  if (auto p = j.find("params"); p != j.end()) {
    if (!p->is_object() && !p->is_array()) {
      return std::unexpected(invalid(id, "params must be an object or an array"));
    }
    params = std::move(*p);
  }

  auto id_member = j.find("id");
  if (id_member == j.end()) return Notification{method->get<std::string>(), std::move(params)};
  if (!id) {
    if (id_member->is_null()) return std::unexpected(invalid({}, "id must not be null"));
    if (id_member->is_string()) {
      return std::unexpected(
          invalid({}, "id longer than " + std::to_string(kMaxIdBytes) + " bytes"));
    }
    return std::unexpected(invalid({}, "id must be a string or an integer"));
  }
  return Request{*id, method->get<std::string>(), std::move(params)};
}

}  // namespace

std::expected<Message, ErrorResponse> decode_message(const Json& j) {
  Json copy = j;
  return decode(copy);
}

std::expected<Message, ErrorResponse> decode_message(Json&& j) {
  return decode(j);
}

ErrorResponse make_error(std::optional<Id> id, int code, std::string message,
                         std::optional<Json> data) {
  return ErrorResponse{std::move(id), code, std::move(message), std::move(data)};
}

ErrorResponse invalid_params(const Request& req, std::string why) {
  return make_error(req.id, error_code::kInvalidParams, "Invalid params: " + why);
}

Json to_json(const Request& m) {
  Json j{{"jsonrpc", "2.0"}, {"id", m.id.to_json()}, {"method", m.method}};
  if (!m.params.is_null()) j["params"] = m.params;
  return j;
}

Json to_json(const Notification& m) {
  Json j{{"jsonrpc", "2.0"}, {"method", m.method}};
  if (!m.params.is_null()) j["params"] = m.params;
  return j;
}

Json to_json(const Response& m) {
  return Json{{"jsonrpc", "2.0"}, {"id", m.id.to_json()}, {"result", m.result}};
}

Json to_json(Response&& m) {
  Json j{{"jsonrpc", "2.0"}, {"id", m.id.to_json()}};
  j["result"] = std::move(m.result);
  return j;
}

Json to_json(const ErrorResponse& m) {
  Json error{{"code", m.code}, {"message", m.message}};
  if (m.data) error["data"] = *m.data;
  Json j{{"jsonrpc", "2.0"}};
  if (m.id) j["id"] = m.id->to_json();
  j["error"] = std::move(error);
  return j;
}

std::string encode_response(const Id& id, const Json& result) {
  // The members in the order encode() writes them (std::map: bytewise).
  const Json id_json = id.to_json();
  const std::size_t estimate = estimate_json_size(result) + estimate_json_size(id_json) + 32;
  std::string out;
  out.reserve(estimate + estimate / 8 + 1);
  out += "{\"id\":";
  append_json(out, id_json);
  out += ",\"jsonrpc\":\"2.0\",\"result\":";
  append_json(out, result);
  out += '}';
  return out;
}

std::string encode(const Json& j) {
  // Reserved once: a tool result can be megabytes of text, and growing the
  // string by doubling copies it again and again. The slack covers escapes in ordinary text (source
  // code: newlines, tabs and quotes are a few percent) and the newline the transport appends; pages
  // of a large reservation that are never written cost nothing.
  const std::size_t estimate = estimate_json_size(j);
  std::string out;
  out.reserve(estimate + estimate / 8 + 1);
  append_json(out, j);
  return out;
}

}  // namespace brig::protocol
