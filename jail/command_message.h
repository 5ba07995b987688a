// The command of a jail built ahead of it (spawn_awaiting): sent by the
// launcher once, over the sync socket the jail's child kept open, as one
// fixed header carrying the command's three stdio fds (SCM_RIGHTS) and then
// the strings: cwd, argv[0]'s PATH candidates (planned by the launcher, as
// for a fresh jail), argv, env, each NUL-terminated. The child receives it
// into static storage without allocating (it runs between clone3 and execve).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "jail/base/error.h"
#include "jail/spec.h"

namespace brig::jail::command {

// What the child can hold: a request over either bound is refused before
// anything is sent (the caller can still build a fresh jail for it).
inline constexpr std::size_t kMaxBytes = 128 * 1024;
inline constexpr std::size_t kMaxStrings = 16 * 1024;

struct Header {
  std::uint32_t bytes = 0;  // the strings that follow
  std::uint32_t candidates = 0;
  std::uint32_t argc = 0;
  std::uint32_t envc = 0;
};

// The strings of `request` in the order above, with the header; fails when
// the request is over a bound.
struct Encoded {
  Header header;
  std::string strings;
};
Result<Encoded> encode(const ExecRequest& request);

// Sends an encoded command with stdio fds (each >= 0). 0 or errno (EPIPE:
// the child is gone).
int send(int socket, const Encoded& command, const int stdio[3]);

// The child's view of a received command; every pointer is into static
// storage, null-terminated arrays.
struct Received {
  const char* cwd = nullptr;
  const char* const* candidates = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

// Child side: receives the command, puts its stdio fds on 0, 1 and 2, and
// fills *out. Async-signal-safe. 0, errno, or EPIPE when the launcher closed
// the socket without sending one (a pooled jail dropped unused), EPROTO for
// a malformed message.
int receive_in_child(int socket, Received* out);

}  // namespace brig::jail::command
