// AuditLog: one JSON line per tool call, in a file the operator names
// (`brig serve --audit-log FILE`): time, client, tool, arguments (long
// strings cut), outcome, exit code, bytes, duration, and the error text of a
// failed call (which names the policy rule behind a denial). Values of an
// `env` argument are never written: a model may pass keys there.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "jail/base/error.h"
#include "protocol/mcp_types.h"
#include "server/peer_credentials.h"
#include "server/tools/registry.h"

namespace spdlog {
class logger;
}

namespace brig::server {

// One finished call, as recorded.
struct AuditRecord {
  std::chrono::system_clock::time_point started;
  std::chrono::nanoseconds duration{0};
  std::optional<PeerCredentials> client;  // empty: stdio
  std::string tool;
  protocol::Json arguments;
  enum class Outcome { ok, error, cancelled, failed } outcome = Outcome::ok;
  std::optional<protocol::ToolResult> result;  // ok and error only
  std::string failure;                         // failed: the exception's text
};

// The JSON line for `record` (no newline). Strings in arguments longer than
// max_string bytes are cut and say by how much.
std::string audit_line(const AuditRecord& record, std::size_t max_string = 256);

class AuditLog {
 public:
  // Opens (creates, appends to) path, mode 0600. Fails with the reason.
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path);
  ~AuditLog();

  void write(const AuditRecord& record);

  // Tool with its handler wrapped to write one record per call, whether it
  // returns, fails or is cancelled. The log must outlive the tool.
  Tool wrap(Tool tool);

 private:
  explicit AuditLog(std::shared_ptr<spdlog::logger> logger);
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace brig::server
