#include "server/worker/wire.h"

#include <algorithm>
#include <utility>

namespace brig::worker {
namespace {

using protocol::Json;

Error malformed(std::string why) {
  return Error{"read worker message", "", std::move(why)};
}

}  // namespace

std::string encode_request(const Request& request) {
  Json j = {{"id", request.id},
            {"op", request.op},
            {"args", request.args},
            {"timeout_ms", request.timeout.count()},
            {"max_bytes", request.max_bytes}};
  return j.dump() + '\n';
}

Result<Request> decode_request(std::string_view line) {
  const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::unexpected(malformed("a request is one JSON object per line"));
  const auto id = j.find("id");
  const auto op = j.find("op");
  const auto args = j.find("args");
  const auto timeout = j.find("timeout_ms");
  const auto max_bytes = j.find("max_bytes");
  if (id == j.end() || !id->is_number_unsigned() || op == j.end() || !op->is_string() ||
      args == j.end() || !args->is_object() || timeout == j.end() ||
      !timeout->is_number_unsigned() || max_bytes == j.end() || !max_bytes->is_number_unsigned()) {
    return std::unexpected(
        malformed("a request needs id, op, args, timeout_ms and max_bytes of the right types"));
  }
  return Request{id->get<std::uint64_t>(), op->get<std::string>(), *args,
                 std::chrono::milliseconds(timeout->get<std::int64_t>()),
                 max_bytes->get<std::size_t>()};
}

std::string encode_reply_header(std::uint64_t id, const Result<files::OpReply>& reply) {
  Json head = {{"id", id}, {"ok", reply.has_value()}};
  std::string_view bytes;
  if (reply) {
    head["header"] = reply->header;
    bytes = reply->bytes;
  } else {
    const Error& e = reply.error();
    head["error"] = {{"what", e.what}, {"where", e.where}, {"why", e.why}, {"errno", e.sys_errno}};
  }
  head["bytes"] = bytes.size();
  // Paths and error texts may hold invalid UTF-8 (file names are bytes):
  // replace it rather than throw.
  std::string out = head.dump(-1, ' ', false, Json::error_handler_t::replace);
  out += '\n';
  return out;
}

void ReplyReader::feed(std::string_view bytes) {
  if (pending_ && pending_->result && buffer_.empty()) {
    std::string& into = pending_->result->bytes;
    const std::size_t n = std::min(bytes.size(), wanted_ - into.size());
    into.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  buffer_.append(bytes);
}

void ReplyReader::take_bytes() {
  std::string& into = pending_->result->bytes;
  const std::size_t n = std::min(buffer_.size(), wanted_ - into.size());
  into.append(buffer_, 0, n);
  buffer_.erase(0, n);
}

Result<std::optional<ReplyReader::Reply>> ReplyReader::next() {
  if (!pending_) {
    const std::size_t newline = buffer_.find('\n');
    if (newline == std::string::npos) {
      if (buffer_.size() > max_header_)
        return std::unexpected(malformed("a reply header line is longer than the limit"));
      return std::nullopt;
    }
    const Json head = Json::parse(std::string_view(buffer_).substr(0, newline), nullptr,
                                  /*allow_exceptions=*/false);
    const auto id = head.is_object() ? head.find("id") : head.end();
    if (!head.is_object() || id == head.end() || !id->is_number_unsigned() ||
        !head.contains("ok") || !head["ok"].is_boolean() || !head.contains("bytes") ||
        !head["bytes"].is_number_unsigned()) {
      return std::unexpected(malformed("a reply header needs id, ok and bytes"));
    }
    buffer_.erase(0, newline + 1);
    Reply reply{id->get<std::uint64_t>(), files::OpReply{}};
    // Members are read only once their types are checked: brig-worker runs in
    // a jail a command may have taken over, and nlohmann's value() throws on
    // a mistyped member, which would escape into the pool as an exception
    // instead of this stream's error (found by tests/fuzz/worker_wire_fuzz).
    const auto header = head.find("header");
    if (header != head.end() && !header->is_object())
      return std::unexpected(malformed("a reply's header must be an object"));
    if (!head["ok"].get<bool>()) {
      Json e = head.value("error", Json::object());
      if (!e.is_object()) e = Json::object();
      const auto typed = [&](const char* key, bool (Json::*is)() const noexcept) {
        const auto m = e.find(key);
        return m == e.end() || ((*m).*is)();
      };
      if (!typed("what", &Json::is_string) || !typed("where", &Json::is_string) ||
          !typed("why", &Json::is_string) || !typed("errno", &Json::is_number_integer)) {
        return std::unexpected(malformed("a reply's error has a member of the wrong type"));
      }
      reply.result = std::unexpected(Error{e.value("what", std::string("worker operation")),
                                           e.value("where", std::string()),
                                           e.value("why", std::string()), e.value("errno", 0)});
      return reply;  // an error carries no bytes
    }
    reply.result->header = head.value("header", Json::object());
    wanted_ = head["bytes"].get<std::size_t>();
    // Room for all of it, within reason: the count is the worker's word.
    reply.result->bytes.reserve(std::min(wanted_, std::size_t{64} << 20));
    pending_ = std::move(reply);
  }
  take_bytes();
  if (pending_->result->bytes.size() < wanted_) return std::nullopt;
  std::optional<Reply> done = std::move(pending_);
  pending_.reset();
  return done;
}

}  // namespace brig::worker
