// The built-in MCP methods, answered inside the session.
#include <array>

#include "protocol/error_codes.h"
#include "protocol/pagination.h"
#include "protocol/schema_check.h"
#include "protocol/session_state.h"
#include "protocol/text.h"
#include "protocol/versions.h"

namespace brig::protocol {

namespace {

constexpr std::array<std::string_view, 6> kKnownMethods = {
    "initialize", "ping", "tools/list", "tools/call", "logging/setLevel", "server/discover"};

bool is_known(std::string_view method) {
  for (auto m : kKnownMethods) {
    if (m == method) return true;
  }
  return false;
}

ErrorResponse method_not_found(const Request& req, std::string why) {
  return make_error(req.id, error_code::kMethodNotFound,
                    "Method not found: " + clip(req.method, 256) + why);
}

// The request's params as an object; a null (absent) params reads as {}.
const Json& params_of(const Request& req) {
  static const Json kEmpty = Json::object();
  return req.params.is_object() ? req.params : kEmpty;
}

}  // namespace

Json Session::State::capabilities() const {
  // The tool list is fixed for the life of the process: no list_changed.
  return Json{{"tools", {{"listChanged", false}}}, {"logging", Json::object()}};
}

void Session::State::handle_request(Request& req, Collector& c) {
  if (call_by_id.contains(req.id)) {
    return error(make_error(req.id, error_code::kInvalidRequest,
                            "Invalid Request: id " + clip(req.id.to_string(), 256) +
                                " is already in flight"),
                 c);
  }
  if (!is_known(req.method)) return error(method_not_found(req, ""), c);
  auto ctx = read_request_context(req);
  if (!ctx) return error(ctx.error(), c);
  if (ctx->era == Era::modern) return handle_modern(req, *ctx, c);
  handle_legacy(req, *ctx, c);
}

void Session::State::handle_modern(Request& req, const RequestContext& ctx, Collector& c) {
  const std::string_view method = req.method;  // compared by size first, no strlen
  if (method == "server/discover") return discover(req, ctx, c);
  if (method == "tools/list") return list_tools(req, ctx, c);
  if (method == "tools/call") return call_tool(req, ctx, c);
  // ping and logging/setLevel were removed in 2026-07-28 (log level is per
  // request now); initialize never arrives here.
  error(method_not_found(req, std::string(" (not part of protocol version ") +
                                  std::string(kModernVersion) + ")"),
        c);
}

void Session::State::handle_legacy(Request& req, const RequestContext& ctx, Collector& c) {
  const std::string_view method = req.method;  // compared by size first, no strlen
  if (method == "initialize") return initialize(req, c);
  // ping is the one request allowed before initialize (lifecycle spec).
  if (method == "ping") return reply(out.result(req.id, Json::object(), Era::legacy, false), c);
  if (method == "server/discover") {
    return error(
        invalid_params(req, std::string("server/discover needs _meta[\"") + kMetaProtocolVersion +
                                "\"] and _meta[\"" + kMetaClientCapabilities + "\"]"),
        c);
  }
  if (!legacy_version) {
    // Without _meta this is either a legacy request before initialize or a
    // modern one missing its required _meta; -32602 is right for both.
    return error(invalid_params(req, "send initialize first, or set _meta[\"" +
                                         std::string(kMetaProtocolVersion) + "\"] to \"" +
                                         std::string(kModernVersion) + "\" and _meta[\"" +
                                         kMetaClientCapabilities + "\"]"),
                 c);
  }
  if (method == "logging/setLevel") return set_level(req, c);
  if (method == "tools/list") return list_tools(req, ctx, c);
  call_tool(req, ctx, c);
}

void Session::State::initialize(const Request& req, Collector& c) {
  const Json& p = params_of(req);
  auto requested = p.find("protocolVersion");
  if (requested == p.end() || !requested->is_string()) {
    return error(invalid_params(req, "initialize needs protocolVersion (a string)"), c);
  }
  if (legacy_version) {
    // Renegotiating mid-session would change the rules for calls in flight.
    return error(
        make_error(req.id, error_code::kInvalidRequest,
                   "Invalid Request: already initialized with protocol version " + *legacy_version),
        c);
  }
  const auto& v = requested->get_ref<const std::string&>();
  legacy_version = is_legacy_version(v) ? v : std::string(kLegacyVersions[0]);
  Json result{{"protocolVersion", *legacy_version},
              {"capabilities", capabilities()},
              {"serverInfo", info.to_json()}};
  if (!instructions.empty()) result["instructions"] = instructions;
  reply(out.result(req.id, std::move(result), Era::legacy, false), c);
}

void Session::State::set_level(const Request& req, Collector& c) {
  const Json& p = params_of(req);
  auto level = p.find("level");
  std::optional<LogLevel> parsed;
  if (level != p.end() && level->is_string()) {
    parsed = parse_log_level(level->get_ref<const std::string&>());
  }
  if (!parsed) {
    return error(invalid_params(req,
                                "level must be one of debug, info, notice, warning, error, "
                                "critical, alert, emergency"),
                 c);
  }
  legacy_log_level = parsed;
  reply(out.result(req.id, Json::object(), Era::legacy, false), c);
}

void Session::State::discover(const Request& req, const RequestContext& ctx, Collector& c) {
  Json versions = Json::array();
  for (auto v : kSupportedVersions) versions.push_back(v);
  Json result{{"supportedVersions", std::move(versions)},
              {"capabilities", capabilities()},
              {"ttlMs", options.list_ttl_ms},
              {"cacheScope", options.cache_scope}};
  if (!instructions.empty()) result["instructions"] = instructions;
  reply(out.result(req.id, std::move(result), ctx.era, false), c);
}

void Session::State::list_tools(const Request& req, const RequestContext& ctx, Collector& c) {
  const Json& p = params_of(req);
  std::size_t offset = 0;
  if (auto cursor = p.find("cursor"); cursor != p.end() && !cursor->is_null()) {
    auto read = cursor->is_string()
                    ? read_cursor(cursor->get_ref<const std::string&>(), tools.size())
                    : std::nullopt;
    if (!read) return error(invalid_params(req, "invalid cursor"), c);
    offset = *read;
  }
  std::size_t end = std::min(tools.size(), offset + options.page_size);
  Json page = Json::array();
  for (std::size_t i = offset; i < end; ++i) page.push_back(tool_json[i]);
  Json result{{"tools", std::move(page)}};
  if (end < tools.size()) result["nextCursor"] = make_cursor(end);
  if (ctx.era == Era::modern) {
    result["ttlMs"] = options.list_ttl_ms;
    result["cacheScope"] = options.cache_scope;
  }
  reply(out.result(req.id, std::move(result), ctx.era, false), c);
}

void Session::State::call_tool(Request& req, const RequestContext& ctx, Collector& c) {
  // name and arguments, from where the scanner put them or from params.
  const std::string* tool_name = nullptr;
  Json* sent_arguments = nullptr;
  if (req.tool_call) {
    if (req.tool_call->name) tool_name = &*req.tool_call->name;
    if (req.tool_call->arguments) sent_arguments = &*req.tool_call->arguments;
  } else if (req.params.is_object()) {
    if (auto name = req.params.find("name"); name != req.params.end() && name->is_string()) {
      tool_name = &name->get_ref<const std::string&>();
    }
    if (auto a = req.params.find("arguments"); a != req.params.end()) sent_arguments = &*a;
  }
  if (tool_name == nullptr) {
    return error(invalid_params(req, "tools/call needs name (a string)"), c);
  }
  auto tool = tool_index.find(*tool_name);
  if (tool == tool_index.end()) {
    return error(invalid_params(req, "unknown tool " + encode(Json(clip(*tool_name, 256)))), c);
  }
  Json arguments = Json::object();
  if (sent_arguments != nullptr) {
    // CallToolRequestParams: arguments, when present, is an object; null is
    // not a way to say "none" (leave the member out for that).
    if (!sent_arguments->is_object()) {
      return error(invalid_params(req, "arguments must be an object"), c);
    }
    arguments = std::move(*sent_arguments);  // may be megabytes (file contents): not copied
  }
  // Bad arguments are a tool error, not a protocol error: the model reads
  // isError results and can correct itself (SEP-1303).
  if (auto why = tool_checks[tool->second].check(arguments)) {
    auto result = ToolResult::error("invalid arguments for tool " + *tool_name + ": " + *why);
    return reply(out.result(req.id, result.to_json(), ctx.era, /*tool_call=*/true), c);
  }
  if (calls.size() >= options.max_in_flight_calls) {
    return error(make_error(req.id, error_code::kInternalError,
                            "too many tool calls in flight (limit " +
                                std::to_string(options.max_in_flight_calls) + ")"),
                 c);
  }
  std::uint64_t n = next_call++;
  std::optional<std::uint64_t> batch;
  if (c.batch) {
    batch = c.batch_id;
    ++c.batch->waiting;
  }
  add_call(n, CallRecord{req.id, ctx, batch, std::nullopt});
  c.actions.emplace_back(std::in_place_type<Call>, CallId{n}, *tool_name, tool->second,
                         std::move(arguments), ctx.progress_token);
}

}  // namespace brig::protocol
