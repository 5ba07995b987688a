#include "server/commands/process_setup.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace brig::commands {

void ensure_standard_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() returns the lowest free fd, which is this one.
    const int opened = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}

void ignore_sigpipe() {
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGPIPE, &sa, nullptr);
}

Result<ClientStdio> take_client_stdio() {
  ClientStdio io{UniqueFd(::fcntl(0, F_DUPFD_CLOEXEC, 3)),
                 UniqueFd(::fcntl(1, F_DUPFD_CLOEXEC, 3))};
  if (!io.in || !io.out)
    return std::unexpected(sys_error("take over stdin/stdout", "fd 0/1", errno));
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null) return std::unexpected(sys_error("open", "/dev/null", errno));
  if (::dup2(null.get(), 0) < 0)
    return std::unexpected(sys_error("redirect stdin", "/dev/null", errno));
  if (::dup2(2, 1) < 0) return std::unexpected(sys_error("redirect stdout", "stderr", errno));
  return io;
}

}  // namespace brig::commands
