// Process-wide set-up the server does once, before anything else.
#pragma once

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"

namespace brig::commands {

// Opens /dev/null on any of fds 0, 1, 2 that is closed, so the first file or
// socket brig opens can never become "stdout" (CI may start brig with no
// stdin). Call first thing in main.
void ensure_standard_fds();

// A departed client must not kill brig: writes to a closed pipe or socket
// fail with EPIPE instead of raising SIGPIPE.
void ignore_sigpipe();

// The client's stdin/stdout, moved to private close-on-exec fds. Afterwards
// fd 0 reads /dev/null and fd 1 writes to stderr, so a stray write to stdout
// (a library's printf) lands in the log instead of corrupting the JSON-RPC
// stream, and no child process inherits the client's pipes.
struct ClientStdio {
  UniqueFd in;
  UniqueFd out;
};
Result<ClientStdio> take_client_stdio();

}  // namespace brig::commands
