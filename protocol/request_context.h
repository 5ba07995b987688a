// What a request's params._meta says about how to serve it: era (modern
// 2026-07-28 by _meta, else legacy), log level, progress token. Internal to
// protocol/.
#pragma once

#include <expected>
#include <optional>

#include "protocol/json_rpc.h"
#include "protocol/mcp_types.h"

namespace brig::protocol {

enum class Era { legacy, modern };

// How one request is served. log_level: modern opt-in to notifications/message
// (empty: none). progress_token: _meta.progressToken (empty: no progress).
struct RequestContext {
  Era era = Era::legacy;
  std::optional<LogLevel> log_level;
  std::optional<Json> progress_token;
};

// The _meta keys of MCP 2026-07-28.
inline constexpr const char* kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kMetaLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr const char* kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

// Reads req.params._meta. A request whose protocolVersion is 2026-07-28 is
// modern and must carry clientCapabilities (an object) and a valid logLevel if
// any; one naming a legacy version, or none at all, is legacy; initialize is
// always legacy. Failure is the error to send: -32602 for params that are not
// an object or malformed _meta, -32022 (data.supported, data.requested) for a
// version brig does not serve.
std::expected<RequestContext, ErrorResponse> read_request_context(const Request& req);

}  // namespace brig::protocol
