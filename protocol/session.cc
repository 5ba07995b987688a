#include "protocol/session.h"

#include <algorithm>

#include "protocol/error_codes.h"
#include "protocol/request_scan.h"
#include "protocol/session_state.h"
#include "protocol/text.h"
#include "protocol/versions.h"

namespace brig::protocol {

namespace {

// Below this a stand-in for an oversized response (an error carrying an id
// of up to kMaxIdBytes) might not fit, and "never a line over the limit"
// could not hold.
constexpr std::size_t kMinOutgoingBytes = 64u << 10;

SessionOptions sane(SessionOptions o) {
  o.max_outgoing_bytes = std::max(o.max_outgoing_bytes, kMinOutgoingBytes);
  o.page_size = std::max<std::size_t>(o.page_size, 1);
  return o;
}

}  // namespace

Session::State::State(ServerInfo info_in, std::string instructions_in,
                      std::vector<ToolDescriptor> tools_in, SessionOptions options_in)
    : info(std::move(info_in)),
      instructions(std::move(instructions_in)),
      tools(std::move(tools_in)),
      options(sane(std::move(options_in))),
      out(info, options.max_outgoing_bytes) {
  for (std::size_t i = 0; i < tools.size(); ++i) {
    tool_json.push_back(tools[i].to_json());
    tool_checks.emplace_back(tools[i].input_schema);
    tool_index.emplace(tools[i].name, i);
  }
}

Session::Session(ServerInfo info, std::string instructions, std::vector<ToolDescriptor> tools,
                 SessionOptions options)
    : state_(std::make_unique<State>(std::move(info), std::move(instructions), std::move(tools),
                                     std::move(options))) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const SessionOptions& Session::options() const {
  return state_->options;
}

std::optional<std::string> Session::legacy_version() const {
  return state_->legacy_version;
}

std::vector<CallId> Session::in_flight() const {
  std::vector<CallId> ids;
  for (const auto& [n, record] : state_->calls) ids.push_back(CallId{n});
  // Oldest first: numbers only grow.
  std::sort(ids.begin(), ids.end(), [](CallId a, CallId b) { return a.value < b.value; });
  return ids;
}

std::vector<Action> Session::on_line(std::string_view line) {
  State& s = *state_;
  Collector c;
  // Nearly every line is one well-formed request: read it without building
  // the envelope's DOM. Anything else takes the general path below.
  if (auto req = scan_request(line, s.options.max_nesting_depth)) {
    s.handle_request(*req, c);
    return std::move(c.actions);
  }
  auto parsed = parse_line(line, s.options.max_nesting_depth);
  if (!parsed) {
    s.error(parsed.error(), c);
    return std::move(c.actions);
  }
  Json& value = *parsed;
  if (!value.is_array()) {
    s.handle_value(std::move(value), c);
    return std::move(c.actions);
  }

  auto refuse = [&](std::string why) {
    s.error(make_error(std::nullopt, error_code::kInvalidRequest, "Invalid Request: " + why), c);
    return std::move(c.actions);
  };
  if (value.empty()) return refuse("empty batch");
  if (!s.legacy_version) {
    return refuse("JSON-RPC batches need an initialized session with protocol version 2025-03-26");
  }
  if (!allows_batches(*s.legacy_version)) {
    return refuse("JSON-RPC batches are not part of protocol version " + *s.legacy_version);
  }
  if (value.size() > s.options.max_batch_size) {
    return refuse("batch of " + std::to_string(value.size()) + " messages, over the limit of " +
                  std::to_string(s.options.max_batch_size));
  }
  c.batch.emplace();
  c.batch_id = s.next_batch++;
  for (auto& member : value) s.handle_value(std::move(member), c);
  PendingBatch batch = std::move(*c.batch);
  c.batch.reset();
  if (batch.waiting == 0) {
    s.flush_batch(std::move(batch), c);
  } else {
    s.batches.emplace(c.batch_id, std::move(batch));
  }
  return std::move(c.actions);
}

std::vector<Action> Session::on_too_long_line() {
  Collector c;
  state_->error(make_error(std::nullopt, error_code::kInvalidRequest,
                           "Invalid Request: line longer than " +
                               std::to_string(state_->options.max_line_bytes) + " bytes; skipped",
                           Json{{"limit", state_->options.max_line_bytes}}),
                c);
  return std::move(c.actions);
}

void Session::State::handle_value(Json&& value, Collector& c) {
  auto message = decode_message(std::move(value));
  if (!message) return error(message.error(), c);
  if (auto* req = std::get_if<Request>(&*message)) return handle_request(*req, c);
  if (auto* n = std::get_if<Notification>(&*message)) return handle_notification(*n, c);
  // A Response or ErrorResponse from the client answers a request brig never
  // sends; replying would start a loop with a confused client.
}

void Session::State::reply(Reply r, Collector& c) const {
  if (c.batch) {
    c.batch->replies.push_back(std::move(r));
  } else {
    c.actions.push_back(Send{out.single(std::move(r))});
  }
}

void Session::State::error(const ErrorResponse& e, Collector& c) const {
  reply(out.error(e), c);
}

void Session::State::handle_notification(const Notification& n, Collector& c) {
  if (n.method != "notifications/cancelled") return;  // initialized, progress, ...: nothing to do
  if (!n.params.is_object() || !n.params.contains("requestId")) return;
  auto id = Id::from_json(n.params["requestId"]);
  if (!id) return;
  auto it = call_by_id.find(*id);
  // Unknown or already answered: the spec lets us ignore it, and a reply to a
  // notification is never allowed.
  if (it == call_by_id.end()) return;
  const std::uint64_t n_call = it->second;
  CallNode record = take_call(n_call);
  c.actions.push_back(Cancel{CallId{n_call}});
  if (record.mapped().batch) batch_member_done(*record.mapped().batch, std::nullopt, c);
  recycle(std::move(record));
}

namespace {

// Spare nodes kept at most: a burst of this many calls reuses them all.
constexpr std::size_t kSpareNodes = 256;

// Inserts key -> value into map, in a spare node when there is one.
template <class Map, class Key, class Value>
void insert_reusing(Map& map, std::vector<typename Map::node_type>& spare, Key&& key,
                    Value&& value) {
  if (spare.empty()) {
    map.emplace(std::forward<Key>(key), std::forward<Value>(value));
    return;
  }
  auto node = std::move(spare.back());
  spare.pop_back();
  node.key() = std::forward<Key>(key);
  node.mapped() = std::forward<Value>(value);
  map.insert(std::move(node));
}

// Keeps a taken node for insert_reusing().
template <class Node>
void keep_spare(std::vector<Node>& spare, Node node) {
  if (!node.empty() && spare.size() < kSpareNodes) spare.push_back(std::move(node));
}

}  // namespace

void Session::State::add_call(std::uint64_t n, CallRecord record) {
  insert_reusing(call_by_id, spare_ids, record.id, n);
  insert_reusing(calls, spare_calls, n, std::move(record));
}

Session::State::CallNode Session::State::take_call(std::uint64_t n) {
  CallNode node = calls.extract(n);
  if (!node.empty()) keep_spare(spare_ids, call_by_id.extract(node.mapped().id));
  return node;
}

void Session::State::recycle(CallNode node) {
  keep_spare(spare_calls, std::move(node));
}

void Session::State::batch_member_done(std::uint64_t batch, std::optional<Reply> r, Collector& c) {
  // The batch being read right now is still in the collector, not the map.
  if (c.batch && c.batch_id == batch) {
    if (r) c.batch->replies.push_back(std::move(*r));
    --c.batch->waiting;
    return;
  }
  auto it = batches.find(batch);
  if (it == batches.end()) return;
  if (r) it->second.replies.push_back(std::move(*r));
  if (--it->second.waiting > 0) return;
  PendingBatch done = std::move(it->second);
  batches.erase(it);
  flush_batch(std::move(done), c);
}

void Session::State::flush_batch(PendingBatch b, Collector& c) const {
  // All members were notifications or cancelled calls: JSON-RPC sends nothing.
  if (b.replies.empty()) return;
  for (auto& line : out.batch(b.replies)) c.actions.push_back(Send{std::move(line)});
}

std::vector<Action> Session::complete(CallId call, const ToolResult& result) {
  // No copy for a call that was cancelled or is unknown: it gets no reply.
  if (!state_->calls.contains(call.value)) return {};
  return complete(call, ToolResult(result));
}

std::vector<Action> Session::complete(CallId call, ToolResult&& result) {
  State& s = *state_;
  State::CallNode node = s.take_call(call.value);
  if (node.empty()) return {};
  CallRecord& record = node.mapped();
  Collector c;
  Reply r = s.out.tool_result(record.id, std::move(result), record.ctx.era);
  if (record.batch) {
    s.batch_member_done(*record.batch, std::move(r), c);
  } else {
    s.reply(std::move(r), c);
  }
  s.recycle(std::move(node));
  return std::move(c.actions);
}

std::vector<Action> Session::fail(CallId call, std::string message) {
  State& s = *state_;
  State::CallNode node = s.take_call(call.value);
  if (node.empty()) return {};
  CallRecord& record = node.mapped();
  Collector c;
  Reply r = s.out.error(make_error(record.id, error_code::kInternalError, std::move(message)));
  if (record.batch) {
    s.batch_member_done(*record.batch, std::move(r), c);
  } else {
    s.reply(std::move(r), c);
  }
  s.recycle(std::move(node));
  return std::move(c.actions);
}

std::optional<std::string> Session::progress(CallId call, double progress,
                                             std::optional<double> total, std::string message) {
  State& s = *state_;
  auto it = s.calls.find(call.value);
  if (it == s.calls.end() || !it->second.ctx.progress_token) return std::nullopt;
  CallRecord& record = it->second;
  // The spec requires progress to increase with every notification; a value
  // that does not is dropped rather than sent out of order.
  if (record.last_progress && progress <= *record.last_progress) return std::nullopt;
  Json params{{"progressToken", *record.ctx.progress_token}, {"progress", progress}};
  if (total) params["total"] = *total;
  if (!message.empty()) params["message"] = std::move(message);
  std::string line = encode(to_json(Notification{"notifications/progress", params}));
  if (line.size() > s.out.max_bytes()) {
    params.erase("message");
    line = encode(to_json(Notification{"notifications/progress", params}));
    if (line.size() > s.out.max_bytes()) return std::nullopt;
  }
  record.last_progress = progress;
  return line;
}

std::optional<std::string> Session::log(std::optional<CallId> call, LogLevel level,
                                        std::string logger, Json data) {
  State& s = *state_;
  std::optional<LogLevel> wanted = s.legacy_log_level;
  if (call) {
    auto it = s.calls.find(call->value);
    if (it == s.calls.end()) return std::nullopt;
    // A modern request is stateless: only its own _meta logLevel counts.
    if (it->second.ctx.era == Era::modern) wanted = it->second.ctx.log_level;
  }
  if (!wanted || level < *wanted) return std::nullopt;
  Json params{{"level", to_string(level)}};
  if (!logger.empty()) params["logger"] = clip(logger, 256);
  params["data"] = std::move(data);
  std::string line = encode(to_json(Notification{"notifications/message", params}));
  if (line.size() > s.out.max_bytes()) {
    params["data"] = "log message too large to send: " + s.out.too_large(line.size());
    line = encode(to_json(Notification{"notifications/message", params}));
  }
  return line;
}

}  // namespace brig::protocol
