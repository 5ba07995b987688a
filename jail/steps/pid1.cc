#include "jail/steps/pid1.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jail/status_record.h"
#include "jail/steps/cgroups.h"

namespace brig::jail::pid1 {
namespace {

static_assert(kLauncherDiedSignal == SIGPWR);

// Forwarded to the command as they arrive from the launcher.
constexpr int kForwarded[] = {SIGHUP,  SIGINT,  SIGQUIT,  SIGTERM,
                              SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

void noop(int) {}

sigset_t handled_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, kLauncherDiedSignal);
  return set;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 125;
}

// Kills every other process of the jail, reaps them, writes git's state
// back, removes the cgroups, reports the command's status and exits with it.
[[noreturn]] void shut_down(pid_t command, bool have_status, int wait_status, const Config& c) {
  const auto stamp = [&c](bool command_side, SetupStep step) {
    if (c.stamp) c.stamp(c.stamp_context, command_side, step);
  };
  if (have_status) stamp(/*command_side=*/true, SetupStep::wait);
  // In a pid namespace, kill(-1) reaches every process of the jail but the
  // init; without one, the command's process group is the best reach.
  if (c.pid_namespace)
    ::kill(-1, SIGKILL);
  else
    ::kill(-command, SIGKILL);  // the group outlives its leader
  if (!c.pid_namespace && !have_status) {
    while (::waitpid(command, &wait_status, 0) < 0 && errno == EINTR) {
    }
    have_status = true;
  }
  // In a pid namespace every other process is dead or dying and comes back
  // to the init: wait for them all. Without one, the killed group's
  // members come back to the init (a subreaper) within moments; a process
  // that left the group is not waited for.
  int idle_rounds = 0;
  for (;;) {
    int st = 0;
    const pid_t p = ::waitpid(-1, &st, c.pid_namespace ? 0 : WNOHANG);
    if (p > 0) {
      if (p == command && !have_status) {
        have_status = true;
        wait_status = st;
      }
      continue;
    }
    if (p < 0 && errno == EINTR) continue;
    if (p == 0 && ++idle_rounds < 100) {
      const timespec ms = {0, 1000000};
      ::nanosleep(&ms, nullptr);
      continue;
    }
    break;
  }
  stamp(/*command_side=*/false, SetupStep::wait);
  // With nothing of the jail left to change it, the private layer is final.
  const int git_unsaved = c.git ? git_state::write_back_in_child(*c.git) : 0;
  int cgroups_left = 0;
  if (c.cgroups) cgroups_left = cgroups::remove_in_child(*c.cgroups);
  if (!have_status) ::_exit(128 + SIGKILL);
  stamp(/*command_side=*/false, SetupStep::init);
  // Last: the launcher may stop waiting once it reads this.
  StatusRecord r;
  r.kind = StatusRecord::command_status;
  r.wait_status = wait_status;
  r.cgroups_left = cgroups_left;
  r.git_unsaved = git_unsaved;
  r.git_fallback = c.git ? c.git->fallback_errno : 0;
  [[maybe_unused]] ssize_t n = ::write(c.status_fd, &r, sizeof r);
  ::_exit(exit_code_of(wait_status));
}

}  // namespace

int block_signals_in_child() {
  struct sigaction sa {};
  sa.sa_handler = noop;
  sigemptyset(&sa.sa_mask);
  for (int s : kForwarded)
    if (::sigaction(s, &sa, nullptr) != 0) return errno;
  if (::sigaction(SIGCHLD, &sa, nullptr) != 0 ||
      ::sigaction(kLauncherDiedSignal, &sa, nullptr) != 0)
    return errno;
  const sigset_t set = handled_set();
  return ::sigprocmask(SIG_BLOCK, &set, nullptr) == 0 ? 0 : errno;
}

int open_signalfd_in_child() {
  const sigset_t set = handled_set();
  const int fd = ::signalfd(-1, &set, SFD_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

void supervise(pid_t command, int signal_fd, const Config& c) {
  pollfd fds[2] = {{signal_fd, POLLIN, 0}, {c.watch_fd, POLLIN, 0}};
  // What the init ran to build the jail, and the command's code up to its
  // execve (run in this memory), need not stay resident while it waits: only
  // this loop and poll map back in.
  if (c.code_pages) process::release_code_pages(*c.code_pages);
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      shut_down(command, false, 0, c);
    }
    // The launcher's end of the watch pipe closed: it died (or dropped the
    // jail), and nobody is left to wait for this one.
    if (fds[1].revents) shut_down(command, false, 0, c);
    if (!(fds[0].revents & POLLIN)) continue;
    signalfd_siginfo si;
    if (::read(signal_fd, &si, sizeof si) != sizeof si) continue;
    const int sig = static_cast<int>(si.ssi_signo);
    if (sig == kLauncherDiedSignal) shut_down(command, false, 0, c);
    if (sig != SIGCHLD) {
      ::kill(command, sig);
      continue;
    }
    // One SIGCHLD may stand for several exits: reap all that are ready.
    for (;;) {
      int st = 0;
      const pid_t p = ::waitpid(-1, &st, WNOHANG);
      if (p <= 0) break;
      if (p == command) shut_down(command, true, st, c);
    }
  }
}

}  // namespace brig::jail::pid1
