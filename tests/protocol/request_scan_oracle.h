// The request scanner's oracle, shared by its unit test and its fuzz
// harness: the general path (parse_line + decode_message) on the same line.
// The scanner may decline any line, but a line it accepts must decode to
// the same Request, params compared type by type (1, 1u and 1.0 differ).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "protocol/json_rpc.h"
#include "protocol/request_scan.h"

namespace brig::protocol::testing {

// What the general path makes of line, when it is a request.
inline std::optional<Request> general(std::string_view line, std::size_t depth) {
  auto parsed = parse_line(line, depth);
  if (!parsed) return std::nullopt;
  auto message = decode_message(std::move(*parsed));
  if (!message) return std::nullopt;
  if (auto* request = std::get_if<Request>(&*message)) return std::move(*request);
  return std::nullopt;
}

// Equal values of equal types, members in the same order.
inline bool same(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
      if (i.key() != j.key() || !same(*i, *j)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

// params as the general path has them: a scanned tools/call's name and
// arguments put back in.
inline Json whole_params(const Request& r) {
  if (!r.tool_call) return r.params;
  Json params = r.params.is_null() ? Json::object() : r.params;
  if (r.tool_call->name) params["name"] = *r.tool_call->name;
  if (r.tool_call->arguments) params["arguments"] = *r.tool_call->arguments;
  return params;
}

// How the scanner and the general path disagree on line; nothing when the
// scanner declines it or both read the same Request.
inline std::optional<std::string> disagreement(std::string_view line, std::size_t depth) {
  auto fast = scan_request(line, depth);
  if (!fast) return std::nullopt;
  auto slow = general(line, depth);
  if (!slow) return "scanned a line the general path refuses";
  if (!(fast->id == slow->id)) return "different id";
  if (fast->method != slow->method) return "different method";
  if (slow->tool_call) return "the general path split params";
  if (fast->tool_call && fast->method != "tools/call") return "split the params of " + fast->method;
  if (!same(whole_params(*fast), slow->params)) {
    return "different params: " + whole_params(*fast).dump() + " vs " + slow->params.dump();
  }
  return std::nullopt;
}

}  // namespace brig::protocol::testing
