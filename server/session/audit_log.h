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
#include "jail/base/unique_fd.h"
#include "protocol/mcp_types.h"
#include "server/egress/relay.h"
#include "server/llm/proxy.h"
#include "server/process/peer_credentials.h"
#include "server/tools/registry.h"

namespace brig::session {

// One finished call, as recorded.
struct AuditRecord {
  std::chrono::system_clock::time_point started;
  std::chrono::nanoseconds duration{0};
  std::optional<process::PeerCredentials> client;  // empty: stdio
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
  // Opens (creates, appends to) path, mode 0600. The file may sit where a
  // jail can write (the workspace), so a symlink there is refused, not
  // followed (O_NOFOLLOW), and so is anything but a regular file (a FIFO
  // would block the server). Fails with the reason, naming the path.
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path);
  ~AuditLog();

  void write(const AuditRecord& record);
  // A line that is no call's: what `brig serve` runs with (policy, limits
  // and how they hold), written once at start so that a reader of the log
  // knows what the calls below it were confined by.
  void write_start(const protocol::Json& facts);

  // A decision of the egress proxy or DNS stub (any thread: one line is
  // one write(2)).
  void write_egress(const egress::EgressRecord& record);
  // One request through the LLM proxy (any thread): route, jail, status,
  // bytes, time to first byte, token counts. No body, header or key.
  void write_llm(const llm::LlmRecord& record);

  // Tool with its handler wrapped to write one record per call, whether it
  // returns, fails or is cancelled. The log must outlive the tool.
  tools::Tool wrap(tools::Tool tool);

 private:
  explicit AuditLog(UniqueFd fd, std::string path);
  void write_line(std::string line);
  UniqueFd fd_;  // O_APPEND: each line is one write(2), never interleaved
  std::string path_;
};

}  // namespace brig::session
