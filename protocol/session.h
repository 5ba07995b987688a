// Session: the MCP protocol state of one connection, sans I/O. Lines in,
// actions out; the server performs the actions and reports tool completions.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/framing.h"
#include "protocol/json_rpc.h"
#include "protocol/mcp_types.h"

namespace brig::protocol {

// Limits and hints for one session. Defaults are what `brig serve` uses.
struct SessionOptions {
  std::size_t page_size = 100;                              // tools per tools/list page (>= 1)
  std::size_t max_outgoing_bytes = 8u << 20;                // longest line ever sent (8 MiB)
  std::size_t max_line_bytes = kDefaultMaxLineBytes;        // the framer's limit, quoted in errors
  std::size_t max_nesting_depth = kDefaultMaxNestingDepth;  // deeper incoming JSON: -32600
  std::size_t max_in_flight_calls = 1024;  // tools/call beyond this: -32603, not run
  std::size_t max_batch_size = 1000;       // longer JSON-RPC batches: one -32600, none run
  std::int64_t list_ttl_ms = 3'600'000;    // modern ttlMs on tools/list and server/discover
  std::string cache_scope = "private";     // modern cacheScope: "private" or "public"
};

// Opaque handle of one accepted tools/call, unique within its Session.
struct CallId {
  std::uint64_t value = 0;
  friend bool operator==(const CallId&, const CallId&) = default;
  friend auto operator<=>(const CallId&, const CallId&) = default;
};

// Write this line (one encoded message, no trailing newline) to the peer.
struct Send {
  std::string line;
};

// Run a tool: arguments already validated against its input schema. Answer
// later with Session::complete(call, ...). progress_token is the request's
// _meta.progressToken (empty: the client wants no progress).
struct Call {
  CallId call;
  std::string tool;
  std::size_t tool_index = 0;  // the tool's place in the list the session was given
  Json arguments;
  std::optional<Json> progress_token;
};

// The client cancelled this call: stop it. The session will send nothing more
// for it; complete() on it returns nothing.
struct Cancel {
  CallId call;
};

using Action = std::variant<Send, Call, Cancel>;

// One connection's protocol state: per-request era (modern 2026-07-28 by
// _meta, legacy by initialize; both may be used on one connection), the
// in-flight tools/call table, legacy log level, pending batches.
// Not thread-safe: call it from one thread (the server's io_context).
class Session {
 public:
  // tools: the catalogue in tools/list order. instructions: sent in the
  // initialize and server/discover results; empty: left out.
  Session(ServerInfo info, std::string instructions, std::vector<ToolDescriptor> tools,
          SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Decodes and handles one framed line. Returns what to do now, in order:
  // answers to built-in methods and errors as Send, accepted tool calls as
  // Call, client cancellations as Cancel. Empty for notifications and for
  // responses sent by the client. Never throws on any input.
  std::vector<Action> on_line(std::string_view line);

  // The error to send (-32600, no id) when the framer reported a line longer
  // than options().max_line_bytes.
  std::vector<Action> on_too_long_line();

  // The response for a finished call: era-decorated, capped at
  // max_outgoing_bytes (a larger result becomes an isError result naming its
  // size and the limit). Empty when the call was cancelled, is unknown, or
  // belongs to a batch that still waits for other calls.
  std::vector<Action> complete(CallId call, const ToolResult& result);
  // Same, moving the result's content into the reply instead of copying it.
  std::vector<Action> complete(CallId call, ToolResult&& result);

  // Like complete(), but answers with a -32603 error carrying message: for a
  // handler that could not produce any result.
  std::vector<Action> fail(CallId call, std::string message);

  // A notifications/progress line for a running call. Empty when the request
  // carried no progressToken, the call is finished, cancelled or unknown, or
  // progress does not exceed the last value sent (progress only increases).
  std::optional<std::string> progress(CallId call, double progress, std::optional<double> total,
                                      std::string message);

  // A notifications/message line at level, or empty when nobody asked for it:
  // for a modern call, its request's _meta["io.modelcontextprotocol/logLevel"]
  // decides; for a legacy call or no call, the level set by logging/setLevel
  // (none set: nothing is sent). Empty for finished/cancelled/unknown calls.
  std::optional<std::string> log(std::optional<CallId> call, LogLevel level, std::string logger,
                                 Json data);

  // Calls accepted and not yet completed or cancelled, oldest first.
  std::vector<CallId> in_flight() const;

  // The negotiated legacy version; empty before a successful initialize.
  std::optional<std::string> legacy_version() const;

  const SessionOptions& options() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace brig::protocol
