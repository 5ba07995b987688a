// The worker's wire format, on the stream socket between brig-server and
// brig-worker. A request is one JSON line:
//   {"id": 7, "op": "read_file", "args": {...}, "timeout_ms": 30000, "max_bytes": 4194304}
// A reply is one JSON line, then exactly `bytes` raw bytes:
//   {"id": 7, "ok": true, "header": {...}, "bytes": 1234}\n<1234 bytes>
//   {"id": 7, "ok": false, "error": {"what": ..., "where": ..., "why": ..., "errno": 2}, "bytes":
//   0}\n
// File contents travel raw (no JSON escaping, no base64) so they are escaped
// once, on the way to the client.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "server/files/op.h"

namespace brig::worker {

struct Request {
  std::uint64_t id = 0;
  std::string op;  // "read_file", "search", …
  protocol::Json args = protocol::Json::object();
  std::chrono::milliseconds timeout{30000};  // becomes files::OpContext::deadline
  std::size_t max_bytes = 4u << 20;          // becomes files::OpContext::max_bytes
};

// The request as one line, '\n' included.
std::string encode_request(const Request& request);
// A request line (without its '\n'). Fails on anything but the shape above.
Result<Request> decode_request(std::string_view line);

// The header line of the reply to request `id` ('\n' included), or the error
// line. A successful reply's raw bytes follow it on the stream: they are
// written from where they are (they can be megabytes), not copied after it.
std::string encode_reply_header(std::uint64_t id, const Result<files::OpReply>& reply);

// Reads replies from a byte stream: feed() what arrives, then take next()
// until it says it needs more.
class ReplyReader {
 public:
  struct Reply {
    std::uint64_t id = 0;
    Result<files::OpReply> result;
  };

  explicit ReplyReader(std::size_t max_header_bytes = 1u << 20) : max_header_(max_header_bytes) {}
  void feed(std::string_view bytes);
  // The next complete reply; nullopt when more bytes are needed. Fails when
  // the stream is not a reply stream (a bad header line, or one over the
  // limit): the worker is then broken and must be replaced.
  Result<std::optional<Reply>> next();

 private:
  // Moves what buffer_ holds of the pending reply's bytes into bytes_.
  void take_bytes();

  std::size_t max_header_;
  std::string buffer_;  // bytes not yet taken: a header line and what follows
  // The reply whose header has been read and whose bytes are still coming.
  // They go straight into its own string, reserved once: a megabyte read is
  // neither reparsed per chunk nor shifted and copied out of buffer_.
  std::optional<Reply> pending_;
  std::size_t wanted_ = 0;  // the pending reply's byte count
};

}  // namespace brig::worker
