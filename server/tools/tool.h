// Tool: one entry of brig's catalogue: what the client sees (a descriptor)
// and the coroutine that runs a call. ToolContext: what a running call may
// use besides its arguments.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <asio/awaitable.hpp>

#include "protocol/mcp_types.h"
#include "server/exec/progress_sink.h"
#include "server/process/peer_credentials.h"

namespace brig::tools {

// The services one running tool call gets. Cancellation (the client's
// notifications/cancelled, its disconnect, or server shutdown) reaches the
// handler through asio: every operation it co_awaits is cancelled and throws
// asio::error::operation_aborted, so timers stop and child processes can be
// killed in the handler's catch or scope guards. Valid until the handler's
// coroutine returns.
// Its progress() (exec::ProgressSink) is how exec streams a job's output.
class ToolContext : public exec::ProgressSink {
 public:
  // Sends a log notification (logger = the tool's name) if the client asked
  // for this level; dropped otherwise.
  virtual void log(protocol::LogLevel level, protocol::Json data) = 0;
  // True once the call was cancelled; for work that does not co_await.
  virtual bool cancelled() const = 0;
  // The client's credentials when known (Unix socket peers); empty on stdio.
  virtual const std::optional<process::PeerCredentials>& peer() const = 0;
  // Whose identity the call's jails take (server/tools/principals.h): a
  // socket peer, admitted by its SO_PEERCRED uid; empty = brig's own, as on
  // stdio, where the client chose brig's user by starting it.
  virtual const std::optional<process::PeerCredentials>& principal() const {
    static const std::optional<process::PeerCredentials> own;
    return own;
  }
  // The connection the call came on, a number no other connection of this
  // server has: limits per connection count by it. 0 outside a session.
  virtual std::uint64_t connection() const { return 0; }
  // Returns once the connection's output has room for a reply (at once when
  // it has): a call about to start work whose reply would only wait in
  // memory behind replies the client has not read waits here first
  // (Transport::output_backlogged). Cancellation ends the wait; the caller's
  // next co_await throws.
  virtual asio::awaitable<void> room_for_reply() { co_return; }
  // True while room_for_reply() would wait.
  virtual bool output_backlogged() const { return false; }
};

// Runs one validated call: the arguments already match the input schema. A
// tool failure is a ToolResult::error(...), which the model sees; an
// exception other than cancellation becomes a -32603 error response.
using ToolHandler = std::function<asio::awaitable<protocol::ToolResult>(protocol::Json arguments,
                                                                        ToolContext& ctx)>;

// The MCP annotations of read_file, list_directory, find_files and search:
// they only read, the same call gives the same answer, and they reach
// nothing beyond the jail's files.
inline protocol::Json read_only_annotations() {
  return protocol::tool_annotations(/*read_only=*/true, /*destructive=*/false,
                                    /*idempotent=*/true, /*open_world=*/false);
}

// A tool as registered: descriptor.name is its unique name.
struct Tool {
  protocol::ToolDescriptor descriptor;
  ToolHandler handler;
};

}  // namespace brig::tools
