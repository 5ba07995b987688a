#include "protocol/request_context.h"

#include "protocol/error_codes.h"
#include "protocol/text.h"
#include "protocol/versions.h"

namespace brig::protocol {

namespace {

ErrorResponse unsupported_version(const Request& req, std::string_view requested) {
  Json supported = Json::array();
  for (auto v : kSupportedVersions) supported.push_back(v);
  return make_error(req.id, error_code::kUnsupportedProtocolVersion, "Unsupported protocol version",
                    Json{{"supported", std::move(supported)}, {"requested", clip(requested, 256)}});
}

}  // namespace

std::expected<RequestContext, ErrorResponse> read_request_context(const Request& req) {
  if (!req.params.is_null() && !req.params.is_object()) {
    return std::unexpected(invalid_params(req, "MCP params must be an object"));
  }
  RequestContext ctx;
  if (req.params.is_null() || !req.params.contains("_meta")) return ctx;
  const Json& meta = req.params["_meta"];
  if (!meta.is_object()) return std::unexpected(invalid_params(req, "_meta must be an object"));

  if (auto token = meta.find("progressToken"); token != meta.end()) {
    if (!token->is_string() && !token->is_number_integer()) {
      return std::unexpected(invalid_params(req, "progressToken must be a string or an integer"));
    }
    ctx.progress_token = *token;
  }
  // initialize is the legacy handshake whatever else the client put in _meta.
  if (req.method == "initialize") return ctx;

  auto version = meta.find(kMetaProtocolVersion);
  if (version == meta.end()) {
    if (meta.contains(kMetaClientCapabilities)) {
      return std::unexpected(
          invalid_params(req, std::string("_meta[\"") + kMetaProtocolVersion + "\"] is missing"));
    }
    return ctx;
  }
  if (!version->is_string()) {
    return std::unexpected(invalid_params(
        req, std::string("_meta[\"") + kMetaProtocolVersion + "\"] must be a string"));
  }
  const auto& v = version->get_ref<const std::string&>();
  if (is_legacy_version(v)) return ctx;
  if (v != kModernVersion) return std::unexpected(unsupported_version(req, v));

  ctx.era = Era::modern;
  auto caps = meta.find(kMetaClientCapabilities);
  if (caps == meta.end() || !caps->is_object()) {
    return std::unexpected(invalid_params(
        req, std::string("_meta[\"") + kMetaClientCapabilities + "\"] must be an object"));
  }
  if (auto level = meta.find(kMetaLogLevel); level != meta.end()) {
    ctx.log_level =
        level->is_string() ? parse_log_level(level->get_ref<const std::string&>()) : std::nullopt;
    if (!ctx.log_level) {
      return std::unexpected(invalid_params(
          req, std::string("_meta[\"") + kMetaLogLevel + "\"] must be a logging level"));
    }
  }
  return ctx;
}

}  // namespace brig::protocol
