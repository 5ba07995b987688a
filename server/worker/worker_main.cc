// brig-worker: serves file operations for brig-server from inside a jail
// built from the server's policy, so the server never opens a path a client
// named: the kernel decides what each path may reach. Requests arrive on
// fd 0 and replies leave on fd 1 (both one stream socket), one at a time;
// the server runs two workers so a long search never blocks a read.
//   brig-worker --workspace DIR
// It runs no untrusted code and holds nothing secret (started by execve with
// the jail's environment); a reply it cannot send ends it, and the server
// starts another.
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "server/files/utf8.h"
#include "server/worker/ops.h"
#include "server/worker/wire.h"

namespace {

using brig::files::OpContext;

// Writes all of head, then all of body, to fd 1 (one writev while the socket
// takes everything); false when the server is gone.
bool write_all(std::string_view head, std::string_view body) {
  while (!head.empty() || !body.empty()) {
    iovec parts[2] = {{const_cast<char*>(head.data()), head.size()},
                      {const_cast<char*>(body.data()), body.size()}};
    const ssize_t n = ::writev(STDOUT_FILENO, parts, 2);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    auto done = static_cast<std::size_t>(n);
    const std::size_t from_head = std::min(done, head.size());
    head.remove_prefix(from_head);
    body.remove_prefix(done - from_head);
  }
  return true;
}

// One request line from fd 0 into `line`; false at end of input.
bool read_line(std::string& buffer, std::string& line) {
  for (;;) {
    if (const std::size_t nl = buffer.find('\n'); nl != std::string::npos) {
      line.assign(buffer, 0, nl);
      buffer.erase(0, nl + 1);
      return true;
    }
    char chunk[65536];
    const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

brig::Result<brig::files::OpReply> serve(const brig::worker::Request& request,
                                         const std::string& workspace) {
  const brig::worker::OpFunction op = brig::worker::find_op(request.op);
  if (op == nullptr) return std::unexpected(brig::Error{"run operation", request.op, "unknown"});
  brig::files::OpContext ctx;
  ctx.workspace = workspace;
  ctx.deadline = std::chrono::steady_clock::now() + request.timeout;
  ctx.max_bytes = request.max_bytes;
  try {
    auto reply = op(request.args, ctx);
    // An error's `where` is a path: shown as names are (server/files/utf8.h).
    if (!reply) reply.error().where = brig::files::name_to_text(reply.error().where);
    return reply;
  } catch (const std::exception& e) {
    // Arguments were validated by the server; an exception here is a bug,
    // reported as the operation's failure instead of ending the worker.
    return std::unexpected(brig::Error{"run operation", request.op, e.what()});
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::string_view(argv[1]) != "--workspace" || argv[2][0] != '/') {
    std::fprintf(stderr, "usage: brig-worker --workspace ABSOLUTE_DIR (started by brig-server)\n");
    return 2;
  }
  const std::string workspace = argv[2];
  std::string buffer, line;
  while (read_line(buffer, line)) {
    auto request = brig::worker::decode_request(line);
    if (!request) {
      // Without an id there is nobody to answer: the stream is broken.
      std::fprintf(stderr, "brig-worker: %s\n", request.error().to_string().c_str());
      return 1;
    }
    const auto reply = serve(*request, workspace);
    const std::string head = brig::worker::encode_reply_header(request->id, reply);
    if (!write_all(head, reply ? std::string_view(reply->bytes) : std::string_view())) return 0;
  }
  return 0;
}
