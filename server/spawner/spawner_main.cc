// brig-spawner: clones every jail brig-server needs (DESIGN.md, "The jail").
// brig-server starts it with posix_spawn, an empty environment, fd 0 a
// SOCK_SEQPACKET socket to the server, fd 1 /dev/null, fd 2 the server's
// stderr, argv[1] the server's pid, and argv[2] "--no-jail-pool" when every
// jail is to be built for its SPAWN (no jail built ahead, jail_pool.h). It links only brig_jail:
// every jail is a clone of this process, so it stays small and single-threaded, and it never holds
// a secret.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "jail/base/unique_fd.h"
#include "server/spawner/spawner_loop.h"

namespace {

using brig::spawner::log_line;

bool is_seqpacket_socket(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  return ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_SEQPACKET;
}

// glibc's posix_spawn cannot reset the signals it keeps for itself (32 and
// 33: thread cancellation, setxid): where brig-server had handlers for them,
// the spawner starts with them ignored, every jail would inherit that
// through exec, and the launcher's sigaction() cannot touch them either. The
// raw system call can; this single-threaded process never needs them.
void reset_libc_internal_signals() {
  struct KernelSigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    unsigned long mask;
  } dfl{SIG_DFL, 0, nullptr, 0};
  for (int sig = 32; sig < SIGRTMIN; ++sig)
    ::syscall(SYS_rt_sigaction, sig, &dfl, nullptr, sizeof dfl.mask);
}

// Sent by the kernel when brig-server dies (PR_SET_PDEATHSIG).
constexpr int kServerDiedSignal = SIGTERM;

// Async-signal-safe: SIGALRM's default action ends the spawner 5 s later,
// if the loop has not ended it by then.
void arm_exit_deadline(int) {
  ::alarm(5);
}

}  // namespace

int main(int argc, char** argv) {
  const bool pool = !(argc == 3 && std::strcmp(argv[2], "--no-jail-pool") == 0);
  if (argc != 2 && pool) {
    log_line(
        "started by brig-server only: brig-spawner <server pid> [--no-jail-pool], fd 0 its "
        "socket");
    return 2;
  }
  const pid_t server = static_cast<pid_t>(std::strtol(argv[1], nullptr, 10));
  // Die with the server, cleanly: its death closes our socket, upon which
  // the loop kills every jail, reaps it and removes its cgroups, then exits.
  // SIGKILL at the server's death skipped that and left every jail's cgroup
  // behind (issue 15; a jail's init may not remove its own group: it runs
  // without the permission to). The death signal only arms a deadline, for
  // a spawner stuck in a jail's setup. The parent may have died before prctl
  // took effect, so look once more: had it, we would now be some reaper's child.
  struct sigaction on_death {};
  on_death.sa_handler = arm_exit_deadline;
  sigemptyset(&on_death.sa_mask);
  if (::sigaction(kServerDiedSignal, &on_death, nullptr) != 0 ||
      ::prctl(PR_SET_PDEATHSIG, kServerDiedSignal) != 0) {
    log_line(std::string("PR_SET_PDEATHSIG: ") + std::strerror(errno));
    return 1;
  }
  if (::getppid() != server) {
    log_line("brig-server (pid " + std::string(argv[1]) + ") is gone");
    return 1;
  }
  // No core dumps of the process that clones jails, and no ptrace or
  // /proc/<pid>/mem access to it for other processes of the same user.
  if (::prctl(PR_SET_DUMPABLE, 0) != 0) {
    log_line(std::string("PR_SET_DUMPABLE: ") + std::strerror(errno));
    return 1;
  }
  if (!is_seqpacket_socket(STDIN_FILENO)) {
    log_line("fd 0 is not a SOCK_SEQPACKET socket");
    return 2;
  }
  // A jail must never inherit the socket: mark it, although the launcher
  // closes every fd the jail is not given anyway.
  ::fcntl(STDIN_FILENO, F_SETFD, FD_CLOEXEC);
  reset_libc_internal_signals();
  // Like brig itself: a jail's child that dies before the launcher writes
  // its go byte must make that write fail with EPIPE, not kill the spawner
  // and every jail with it. The jail's command gets default dispositions back.
  ::signal(SIGPIPE, SIG_IGN);
  brig::UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) {
    log_line(std::string("open /dev/null: ") + std::strerror(errno));
    return 1;
  }
  brig::spawner::SpawnerLoop loop(STDIN_FILENO, std::move(dev_null), pool);
  return loop.run();
}
