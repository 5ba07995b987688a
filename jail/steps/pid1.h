// The jail's init: PID 1 of the jail's pid namespace. It forks the command,
// reaps every process the kernel reparents to it, forwards the launcher's
// signals to the command, and when the command exits (or the launcher dies)
// kills whatever is left, writes git's state back (git_state.h), removes
// the jail's cgroups and exits with the command's status. Its exit ends the pid namespace.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "jail/base/setup_step.h"
#include "jail/steps/cgroups.h"
#include "jail/steps/git_state.h"
#include "jail/steps/process.h"

namespace brig::jail::pid1 {

// The signal a dying launcher sends its init (PR_SET_PDEATHSIG): as for a
// classic init, SIGPWR means shut down.
inline constexpr int kLauncherDiedSignal = 30;  // SIGPWR on x86_64

// Installs a no-op handler for every signal the init handles (a pid
// namespace's init never receives a signal whose disposition is SIG_DFL) and
// blocks them, for signalfd. Returns 0 or errno.
int block_signals_in_child();

// The signalfd for block_signals_in_child's set. Returns the fd or -errno.
int open_signalfd_in_child();

struct Config {
  bool pid_namespace = true;
  int status_fd = -1;                          // for the final command_status record
  int watch_fd = -1;                           // POLLHUP = the launcher is gone
  const cgroups::Received* cgroups = nullptr;  // removed once every jail process is reaped
  const git_state::Kept* git = nullptr;        // written back once every process is reaped
  // Released (process::release_code_pages) before the loop first waits.
  const std::vector<process::PageRange>* code_pages = nullptr;
  // The step timer (step_times.h), when on: called with (side's step) at
  // the shut-down's milestones: the command reaped (command wait), every
  // other process reaped (child wait), git and cgroups done, just before
  // the status is written (child init). Async-signal-safe.
  void (*stamp)(const void* context, bool command_side, SetupStep step) = nullptr;
  const void* stamp_context = nullptr;
};

// Runs the init loop for `command` until it exits. Async-signal-safe.
[[noreturn]] void supervise(pid_t command, int signal_fd, const Config& config);

}  // namespace brig::jail::pid1
