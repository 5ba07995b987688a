// The command a jail built ahead receives (jail/command_message.h), as the
// child reads it: a header, with three fds, then the strings. The input is
// the header's 16 bytes and the strings; it is sent over a socketpair
// exactly as the launcher would, then the sender's end is shut so that a
// header promising more bytes than follow ends in EPROTO, not a hang.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "jail/base/fd_message.h"
#include "jail/command_message.h"

namespace {

// Counts the entries of a null-terminated array (the receiver promises one).
std::size_t entries(const void* const* array) {
  std::size_t n = 0;
  while (array[n] != nullptr) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace brig::jail::command;
  Header header;
  // Bigger inputs would fill the socket buffer before the receiver reads;
  // bounds over kMaxBytes are still reached through the header's fields.
  if (size < sizeof header || size > 64 * 1024) return 0;
  std::memcpy(&header, data, sizeof header);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  // The receiver dup2()s the fds onto 0, 1 and 2: copies of those same fds
  // leave the fuzzer's own stdio as it was.
  const int stdio[3] = {::dup(0), ::dup(1), ::dup(2)};
  if (brig::send_with_fds(sv[0], &header, sizeof header, stdio, 3) != 0) std::abort();
  for (int fd : stdio) ::close(fd);
  const std::size_t rest = size - sizeof header;
  if (rest > 0 && ::write(sv[0], data + sizeof header, rest) != static_cast<ssize_t>(rest)) {
    std::abort();
  }
  ::shutdown(sv[0], SHUT_WR);

  Received got;
  const int error = receive_in_child(sv[1], &got);
  ::close(sv[0]);
  ::close(sv[1]);
  if (error != 0) return 0;
  // What the child then execs from must hold exactly what the header said.
  if (got.cwd == nullptr || got.candidates == nullptr || got.argv == nullptr ||
      got.envp == nullptr) {
    std::abort();
  }
  if (entries(reinterpret_cast<const void* const*>(got.candidates)) != header.candidates ||
      entries(reinterpret_cast<const void* const*>(got.argv)) != header.argc ||
      entries(reinterpret_cast<const void* const*>(got.envp)) != header.envc) {
    std::abort();
  }
  return 0;
}
