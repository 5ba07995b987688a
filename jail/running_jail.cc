#include "jail/running_jail.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail/child_plan.h"
#include "jail/steps/pid1.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace brig::jail {

RunningJail::RunningJail() = default;
RunningJail::RunningJail(RunningJail&&) noexcept = default;
RunningJail& RunningJail::operator=(RunningJail&& o) noexcept {
  if (this != &o) {
    kill_and_reap();
    pid_ = o.pid_;
    pidfd_ = std::move(o.pidfd_);
    status_fd_ = std::move(o.status_fd_);
    watch_fd_ = std::move(o.watch_fd_);
    command_fd_ = std::move(o.command_fd_);
    bind_sources_ = std::move(o.bind_sources_);
    built_from_ = std::move(o.built_from_);
    cgroup_ = std::move(o.cgroup_);
    listeners_ = std::move(o.listeners_);
    namespace_hold_ = std::move(o.namespace_hold_);
    layers_ = std::move(o.layers_);
    started_ = o.started_;
    deadline_ = o.deadline_;
    plan_ = std::move(o.plan_);
    pid_namespace_ = o.pid_namespace_;
    steps_ = std::move(o.steps_);
    reaped_ = o.reaped_;
    o.reaped_ = true;
  }
  return *this;
}
RunningJail::~RunningJail() {
  kill_and_reap();
}

void RunningJail::kill_and_reap() {
  // A jail built ahead and never given its command: its command, waiting
  // for one, exits at end of file (contain.cc, await_command), and the init
  // suspended under it is free to end the jail.
  command_fd_.reset();
  if (!reaped_ && pidfd_) {
    reaped_ = true;
    if (!pid_namespace_) {
      // No pid namespace to end: the init must kill the command's process
      // group itself, given a moment before it is killed too.
      signal(pid1::kLauncherDiedSignal);
      pollfd p = {pidfd_.get(), POLLIN, 0};
      ::poll(&p, 1, 2000);
    }
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    siginfo_t info{};
    while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                    WEXITED) != 0 &&
           errno == EINTR) {
    }
  }
  cgroups::remove(cgroup_);
}

int RunningJail::signal(int sig) const {
  if (reaped_) return ESRCH;
  return ::syscall(SYS_pidfd_send_signal, pidfd_.get(), sig, nullptr, 0) == 0 ? 0 : errno;
}

}  // namespace brig::jail
