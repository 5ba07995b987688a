// Outcome: how one jailed command ended, in the style of sandbox2's Result.
// The exit-status mapping is the one `brig run` uses (like `timeout` and
// `env`): the command's code; 128+signal; 124 timed out; 125 the jail could
// not be set up; 126 found but not executable; 127 not found.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <optional>
#include <string>

#include "jail/base/setup_step.h"
#include "jail/layer_report.h"
#include "jail/step_times.h"

namespace brig::jail {

// A step of the jail's setup that failed, with the kernel's errno.
struct SetupFailure {
  SetupStep step = SetupStep::none;  // the launcher's or the child's
  int sys_errno = 0;                 // 0 when no system call failed (e.g. validation)
  std::string message;               // what failed, on which input, and why
  friend bool operator==(const SetupFailure&, const SetupFailure&) = default;
};

struct Outcome {
  enum class Kind {
    exited,        // the command exited with exit_code
    signaled,      // the command was killed by signal
    timed_out,     // the wall-time deadline passed; the whole jail was killed
    setup_failed,  // the jail or the execve failed; see setup
  };
  Kind kind = Kind::exited;
  int exit_code = 0;                     // exited only
  int signal = 0;                        // signaled only
  SetupFailure setup;                    // setup_failed only
  std::chrono::nanoseconds duration{0};  // from spawn to the init's reaping (run(): to its
                                         // report); 0 if never spawned
  struct rusage rusage {};               // the whole jail's (the init and all it reaped); zero
                                         // from run(), which does not reap the init
  LayerReport layers;                    // what was enforced; empty if never spawned
  std::string warning;                   // not a failure, but the caller should hear it
                                         // (git's state not written back); empty = none
  std::optional<StepTimes> steps;        // with SpawnOptions::time_steps

  // The status `brig run` exits with (see the top of this file).
  int exit_status() const;
  // "exited 3", "signaled 9 (Killed)", "timed out", "setup failed at step mount: …".
  std::string to_string() const;
};

// An Outcome for a failure before the jail existed (validation, clone3, maps).
Outcome setup_failed_outcome(SetupStep step, int sys_errno, std::string message);

}  // namespace brig::jail
