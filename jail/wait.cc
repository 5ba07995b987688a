// The launcher's end of a jail: waiting for its init's report or exit, the
// deadline, the signals forwarded meanwhile, and the Outcome.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "jail/child_plan.h"
#include "jail/failure_message.h"
#include "jail/launcher.h"
#include "jail/status_record.h"
#include "jail/steps/pid1.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace brig::jail {
namespace {

// The records the init has written so far; every read is non-blocking.
struct StatusSeen {
  std::optional<StatusRecord> failure;  // the first setup failure
  std::optional<StatusRecord> status;   // the command's status: the init is exiting
  bool eof = false;                     // the init has exited (or closed the pipe)
};

void read_status(int fd, StatusSeen& seen) {
  StatusRecord r;
  ssize_t got;
  while ((got = ::read(fd, &r, sizeof r)) == sizeof r) {
    if (r.kind == StatusRecord::setup_failed && !seen.failure) seen.failure = r;
    if (r.kind == StatusRecord::command_status) seen.status = r;
  }
  if (got == 0) seen.eof = true;
}

// How the command ended, from its status record.
bool command_ended(const std::optional<StatusRecord>& status, Outcome& o) {
  if (status && WIFEXITED(status->wait_status)) {
    o.kind = Outcome::Kind::exited;
    o.exit_code = WEXITSTATUS(status->wait_status);
    return true;
  }
  if (status && WIFSIGNALED(status->wait_status)) {
    o.kind = Outcome::Kind::signaled;
    o.signal = WTERMSIG(status->wait_status);
    return true;
  }
  return false;
}

}  // namespace

// One wait for one jail: the poll loop until the init reports or exits,
// then its reaping and the Outcome.
class Waiter {
 public:
  Waiter(RunningJail& j, std::optional<RunningJail::Clock::time_point> deadline, int signal_fd,
         bool until_status, bool remove_cgroups = true)
      : j_(j),
        deadline_(deadline),
        signal_fd_(signal_fd),
        remove_cgroups_(remove_cgroups),
        fds_{{j.pidfd_.get(), POLLIN, 0},
             {signal_fd, POLLIN, 0},
             {until_status ? j.status_fd_.get() : -1, POLLIN, 0}} {
    if (j.deadline_ && (!deadline_ || *j.deadline_ < *deadline_)) deadline_ = j.deadline_;
    ::fcntl(j.status_fd_.get(), F_SETFL, O_NONBLOCK);
  }

  Result<Outcome> wait();
  // Speed only (docs/jail.md): `code` is released (process::release_code_pages)
  // just before the first poll, so that what stays resident while the
  // command runs is the poll loop's own pages and nothing run on the way.
  Waiter& releasing_code_first(const std::vector<process::PageRange>& code) {
    release_ = &code;
    return *this;
  }

 private:
  Result<void> poll_until_done();
  int timeout_ms() const;
  void on_deadline();
  bool on_status();  // true: the command's status came
  Result<void> reap_init();
  Outcome outcome(RunningJail::Clock::time_point ended) const;
  void init_ended(Outcome& o) const;  // without the command's status

  RunningJail& j_;
  std::optional<RunningJail::Clock::time_point> deadline_;
  int signal_fd_;
  bool remove_cgroups_;  // false: left to ~RunningJail (wait_until_status's caller)
  pollfd fds_[3];        // poll ignores the entries whose fd is negative
  bool timed_out_ = false;
  bool grace_ = false;  // no pid namespace: the init was told to shut down
  bool init_exiting_ = false;
  const std::vector<process::PageRange>* release_ = nullptr;
  StatusSeen seen_;
  siginfo_t info_{};
  struct rusage ru_ {};
};

int Waiter::timeout_ms() const {
  if (!deadline_ || timed_out_) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(*deadline_ - RunningJail::Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

void Waiter::on_deadline() {
  if (grace_) {
    // The init did not finish shutting down within its grace period.
    grace_ = false;
    timed_out_ = true;
    j_.signal(SIGKILL);
    return;
  }
  // One SIGKILL to the init ends the pid namespace, so every process of
  // the jail, grandchildren included. Without one, the init shuts the jail
  // down itself (kills the command's process group), and is killed if it
  // has not within a grace period.
  if (j_.pid_namespace_) {
    timed_out_ = true;
    j_.signal(SIGKILL);
  } else {
    j_.signal(pid1::kLauncherDiedSignal);
    deadline_ = RunningJail::Clock::now() + std::chrono::seconds(2);
    grace_ = true;
  }
}

bool Waiter::on_status() {
  read_status(j_.status_fd_.get(), seen_);
  // The init reports the command's status once it has killed and reaped
  // every other process of the jail and removed its cgroups: what is left
  // is its own exit, with the teardown of the jail's namespaces (~0.3 ms),
  // which need not delay the caller.
  if (seen_.status && !timed_out_ && !grace_) return init_exiting_ = true;
  if (seen_.eof) fds_[2].fd = -1;
  return false;
}

Result<void> Waiter::poll_until_done() {
  for (;;) {
    const int timeout = timeout_ms();
    if (release_) {
      process::release_code_pages(*release_);
      release_ = nullptr;
    }
    const int n = ::poll(fds_, 3, timeout);
    if (n < 0 && errno != EINTR)
      return std::unexpected(sys_error("poll the jail's pidfd", "", errno));
    if (n == 0 && (grace_ || (deadline_ && !timed_out_))) {
      on_deadline();
      continue;
    }
    if (n > 0 && (fds_[1].revents & POLLIN)) {
      signalfd_siginfo si;
      if (::read(signal_fd_, &si, sizeof si) == sizeof si)
        j_.signal(static_cast<int>(si.ssi_signo));
    }
    if (n > 0 && fds_[2].revents && on_status()) return {};
    if (n > 0 && (fds_[0].revents & POLLIN)) return {};
  }
}

// An exiting init is neither waited for nor killed (~RunningJail): it ends
// by itself, and its zombie goes when the caller exits.
Result<void> Waiter::reap_init() {
  while (!init_exiting_ &&
         ::syscall(SYS_waitid, P_PIDFD, j_.pidfd_.get(), &info_, WEXITED, &ru_) != 0) {
    if (errno != EINTR)
      return std::unexpected(sys_error("waitid the jail's init", std::to_string(j_.pid_), errno));
  }
  j_.reaped_ = true;
  return {};
}

void Waiter::init_ended(Outcome& o) const {
  if (info_.si_code == CLD_KILLED || info_.si_code == CLD_DUMPED) {
    o.kind = Outcome::Kind::signaled;  // the init itself was killed from outside
    o.signal = info_.si_status;
    return;
  }
  o = setup_failed_outcome(SetupStep::init, 0,
                           "the jail's init exited with status " + std::to_string(info_.si_status) +
                               " before starting the command");
}

Outcome Waiter::outcome(RunningJail::Clock::time_point ended) const {
  Outcome o;
  if (seen_.failure) {
    const ChildPlan& p = *j_.plan_;
    o = setup_failed_outcome(static_cast<SetupStep>(seen_.failure->step), seen_.failure->sys_errno,
                             describe_failure(p, j_.cgroup_, *seen_.failure,
                                              p.exec.strings.empty() ? "" : p.exec.strings[0]));
  } else if (timed_out_ || grace_) {
    o.kind = Outcome::Kind::timed_out;
  } else if (!command_ended(seen_.status, o)) {
    init_ended(o);
  }
  if (seen_.status) o.warning = git_warning(*seen_.status);
  o.duration = ended - j_.started_;
  o.rusage = ru_;
  o.layers = j_.layers_;
  if (j_.steps_.active()) o.steps = j_.steps_.read(j_.started_);
  return o;
}

Result<Outcome> Waiter::wait() {
  if (j_.reaped_)
    return std::unexpected(
        Error{"wait for a jail", std::to_string(j_.pid_), "already waited for", 0});
  BRIG_TRY_VOID(poll_until_done());
  j_.steps_.stamps().mark(Milestone::status_received);
  BRIG_TRY_VOID(reap_init());
  const auto ended = RunningJail::Clock::now();
  if (init_exiting_ && seen_.status->cgroups_left == 0) j_.cgroup_.paths.clear();
  if (remove_cgroups_) cgroups::remove(j_.cgroup_);
  // Every record was written before the init exited; only what the pipe
  // already holds counts.
  read_status(j_.status_fd_.get(), seen_);
  return outcome(ended);
}

Result<Outcome> wait(RunningJail& j, std::optional<RunningJail::Clock::time_point> deadline) {
  return Waiter(j, deadline, -1, /*until_status=*/false).wait();
}

Result<Outcome> wait_until_status(RunningJail& j,
                                  std::optional<RunningJail::Clock::time_point> deadline,
                                  bool remove_cgroups) {
  return Waiter(j, deadline, -1, /*until_status=*/true, remove_cgroups).wait();
}

Outcome run(const JailSpec& spec, const ExecRequest& request, const StartedHook& started) {
  sigset_t forwarded, old;
  sigemptyset(&forwarded);
  for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH})
    sigaddset(&forwarded, s);
  ::sigprocmask(SIG_BLOCK, &forwarded, &old);
  UniqueFd sigfd(::signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));
  Outcome o;
  // Computed before the spawn, released by the Waiter just before it polls:
  // brig run only waits from there, and what it ran to load the policy and
  // plan the jail need not stay resident while the command runs. (Each page
  // run after the release maps its neighbours back in, so the release is as
  // late as it can be.)
  const std::vector<process::PageRange> code = process::code_pages();
  auto j = spawn(spec, request);
  Result<void> hooked;
  if (j && started) hooked = started(*j);
  if (!j) {
    o = setup_failed_outcome(j.error().step, j.error().sys_errno, j.error().to_string());
  } else if (!hooked) {
    // Dropping the RunningJail kills the whole jail.
    o = setup_failed_outcome(hooked.error().step, hooked.error().sys_errno,
                             hooked.error().to_string());
  } else if (auto w = Waiter(*j, std::nullopt, sigfd.get(), /*until_status=*/true)
                          .releasing_code_first(code)
                          .wait();
             !w) {
    o = setup_failed_outcome(SetupStep::wait, w.error().sys_errno, w.error().to_string());
  } else {
    o = std::move(*w);
  }
  sigfd.reset();
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  return o;
}

}  // namespace brig::jail
