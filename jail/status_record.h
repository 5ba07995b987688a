// The jail's child reports to its launcher over one CLOEXEC pipe, in
// fixed-size records that a single write() keeps whole (< PIPE_BUF): a setup
// failure as {step, errno, index}, and at the end the command's wait status.
// EOF means the init is gone; no record at all means it was killed.
#pragma once

#include <unistd.h>

#include <cstdint>

#include "jail/base/setup_step.h"

namespace brig::jail {

// One record on the status pipe.
struct StatusRecord {
  enum Kind : uint32_t { setup_failed = 1, command_status = 2 };
  uint32_t kind = 0;
  uint32_t step = 0;         // setup_failed: a SetupStep
  int32_t sys_errno = 0;     // setup_failed: the errno
  int32_t index = -1;        // setup_failed: which op of the step, or -1
  int32_t wait_status = 0;   // command_status: the command's raw wait status
  int32_t cgroups_left = 0;  // command_status: the jail's cgroups the init could not remove
  int32_t git_unsaved = 0;   // command_status: git state files not written back (git_state.h)
  int32_t git_fallback = 0;  // command_status: why .git was read-only as a whole (an errno), or 0
};

// Child side: reports a failed step. Async-signal-safe; a failed write is
// ignored because the exit status still says the setup failed.
inline void report_setup_failure(int fd, SetupStep step, int err, int index = -1) {
  StatusRecord r;
  r.kind = StatusRecord::setup_failed;
  r.step = static_cast<uint32_t>(step);
  r.sys_errno = err;
  r.index = index;
  [[maybe_unused]] ssize_t n = ::write(fd, &r, sizeof r);
}

}  // namespace brig::jail
