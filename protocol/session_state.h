// The inside of Session, shared by its .cc files. Internal to protocol/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/outgoing.h"
#include "protocol/request_context.h"
#include "protocol/schema_check.h"
#include "protocol/session.h"

namespace brig::protocol {

// One accepted tools/call that has not been answered or cancelled.
struct CallRecord {
  Id id;
  RequestContext ctx;
  std::optional<std::uint64_t> batch;   // the batch whose response waits for it
  std::optional<double> last_progress;  // the last progress value sent
};

// A batch whose response array waits for its tool calls.
struct PendingBatch {
  std::vector<Reply> replies;
  std::size_t waiting = 0;  // calls of this batch still running
};

// What handling one line produces. While a batch line is handled, replies go
// to `batch` (numbered batch_id) instead of becoming Send actions.
struct Collector {
  std::vector<Action> actions;
  std::optional<PendingBatch> batch;
  std::uint64_t batch_id = 0;
};

struct Session::State {
  State(ServerInfo info, std::string instructions, std::vector<ToolDescriptor> tools,
        SessionOptions options);

  // session.cc: lines, batches, notifications, call bookkeeping.
  void handle_value(Json&& value, Collector& c);
  void reply(Reply r, Collector& c) const;
  void error(const ErrorResponse& e, Collector& c) const;
  void handle_notification(const Notification& n, Collector& c);
  // A call of batch `batch` will never answer (it was cancelled) or has just
  // answered with `r`: account for it and send the batch when it is complete.
  void batch_member_done(std::uint64_t batch, std::optional<Reply> r, Collector& c);
  void flush_batch(PendingBatch b, Collector& c) const;

  // session_methods.cc: the built-in methods.
  // Non-const: tools/call moves its arguments out of req.params.
  void handle_request(Request& req, Collector& c);
  void handle_legacy(Request& req, const RequestContext& ctx, Collector& c);
  void handle_modern(Request& req, const RequestContext& ctx, Collector& c);
  void initialize(const Request& req, Collector& c);
  void set_level(const Request& req, Collector& c);
  void discover(const Request& req, const RequestContext& ctx, Collector& c);
  void list_tools(const Request& req, const RequestContext& ctx, Collector& c);
  void call_tool(Request& req, const RequestContext& ctx, Collector& c);
  Json capabilities() const;

  // session.cc: the two tables of calls in flight.
  using CallNode = std::unordered_map<std::uint64_t, CallRecord>::node_type;
  void add_call(std::uint64_t n, CallRecord record);
  // Takes call n out of both tables; empty if it is not in flight.
  CallNode take_call(std::uint64_t n);
  // Keeps a taken call's node for a later add_call.
  void recycle(CallNode node);

  ServerInfo info;
  std::string instructions;
  std::vector<ToolDescriptor> tools;
  std::vector<Json> tool_json;             // tools[i].to_json(), made once
  std::vector<SchemaChecker> tool_checks;  // tools[i].input_schema, read once
  std::unordered_map<std::string, std::size_t> tool_index;
  SessionOptions options;
  Outgoing out;

  std::optional<std::string> legacy_version;  // set by initialize
  std::optional<LogLevel> legacy_log_level;   // set by logging/setLevel
  std::uint64_t next_call = 1;
  std::uint64_t next_batch = 1;
  // Hashed, not ordered: a pipelining client keeps hundreds of calls in
  // flight, and each call's insert, lookup and erase walked the tree.
  std::unordered_map<std::uint64_t, CallRecord> calls;
  std::unordered_map<Id, std::uint64_t> call_by_id;
  // Nodes of finished calls, reused by the next ones: a pipelining client's
  // bursts of calls otherwise cost a malloc and a free per node.
  std::vector<CallNode> spare_calls;
  std::vector<std::unordered_map<Id, std::uint64_t>::node_type> spare_ids;
  std::map<std::uint64_t, PendingBatch> batches;
};

}  // namespace brig::protocol
