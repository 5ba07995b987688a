// Differential: the request scanner (protocol/request_scan.h) against the
// general path (parse_line + decode_message). The scanner may decline any
// line, but a line it accepts must decode to the same Request, params
// compared type by type (1, 1u and 1.0 differ).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "protocol/json_rpc.h"
#include "protocol/request_scan.h"

namespace {

using brig::protocol::Json;
using brig::protocol::Request;

constexpr std::size_t kDepth = brig::protocol::kDefaultMaxNestingDepth;

std::optional<Request> general(std::string_view line) {
  auto parsed = brig::protocol::parse_line(line, kDepth);
  if (!parsed) return std::nullopt;
  auto message = brig::protocol::decode_message(std::move(*parsed));
  if (!message) return std::nullopt;
  if (auto* request = std::get_if<Request>(&*message)) return std::move(*request);
  return std::nullopt;
}

// Equal values of equal types, members in the same order.
bool same(const Json& a, const Json& b) {
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
Json whole_params(const Request& r) {
  if (!r.tool_call) return r.params;
  Json params = r.params.is_null() ? Json::object() : r.params;
  if (r.tool_call->name) params["name"] = *r.tool_call->name;
  if (r.tool_call->arguments) params["arguments"] = *r.tool_call->arguments;
  return params;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  auto fast = brig::protocol::scan_request(line, kDepth);
  auto slow = general(line);
  if (!fast) return 0;
  // Each disagreement aborts, so libFuzzer keeps the line as a crash.
  if (!slow) std::abort();  // scanned a line the general path refuses
  if (!(fast->id == slow->id)) std::abort();
  if (fast->method != slow->method) std::abort();
  if (slow->tool_call) std::abort();  // only the scanner splits params
  if (fast->tool_call && fast->method != "tools/call") std::abort();
  if (!same(whole_params(*fast), slow->params)) std::abort();
  return 0;
}
