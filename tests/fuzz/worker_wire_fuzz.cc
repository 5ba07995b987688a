// The worker's wire (server/worker/wire.h), both directions: a request line
// as brig-worker decodes it, and a reply stream as the server's ReplyReader
// reads it. brig-worker runs in a jail whose command may have taken it over,
// so the reply stream is outside input to brig-server: any bytes must end in
// replies or an error, never a crash or an exception.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/worker/wire.h"

namespace {

void request_line(std::string_view line) {
  auto request = brig::worker::decode_request(line);
  if (!request) return;
  // What decodes must survive the server's own encoding unchanged.
  std::string encoded = brig::worker::encode_request(*request);
  encoded.pop_back();  // the '\n'
  auto again = brig::worker::decode_request(encoded);
  if (!again || again->id != request->id || again->op != request->op ||
      again->args != request->args || again->timeout != request->timeout ||
      again->max_bytes != request->max_bytes) {
    std::abort();
  }
}

// Feeds the stream in chunks of `chunk` bytes, taking replies after each, as
// the pool does when bytes arrive.
void reply_stream(std::string_view stream, std::size_t chunk) {
  brig::worker::ReplyReader reader(/*max_header_bytes=*/4096);
  while (true) {
    const std::size_t n = std::min(chunk, stream.size());
    reader.feed(stream.substr(0, n));
    stream.remove_prefix(n);
    while (true) {
      auto next = reader.next();
      if (!next) return;  // a broken worker: the pool replaces it
      if (!*next) break;  // needs more bytes
    }
    if (stream.empty()) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The first byte: which side, and for the replies the chunk size (1..128).
  if (data[0] & 0x80) {
    reply_stream(rest, (data[0] & 0x7f) + 1);
  } else {
    request_line(rest);
  }
  return 0;
}
