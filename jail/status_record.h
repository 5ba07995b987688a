// The jail's child reports to its launcher over one CLOEXEC pipe, in
// fixed-size records that a single write() keeps whole (< PIPE_BUF): a setup
// failure as {step, errno, index}, and at the end the command's wait status.
// EOF means the init is gone; no record at all means it was killed.
#pragma once

#include <unistd.h>

#include <cstdint>

namespace brig::jail {

// Where in the child's sequence a failure happened (contain.cc has the order).
enum class Step : uint32_t {
  sync,          // waiting for the launcher's go byte
  identity,      // dumpable, pdeathsig, setsid
  fds,           // stdio and kept fds moved into place, the rest closed
  mount,         // index = the mount plan's op
  netns,         // making the network namespace (the init's helper) and joining it
  loopback,      // lo up in the new network namespace
  hostname,      // sethostname in the new uts namespace
  signals,       // the init's signal handling
  fork,          // the init forking the command
  cgroup,        // the command joining its cgroup; index = hierarchy
  rlimit,        // index = the rlimit entry
  chdir,         // the command's working directory
  caps,          // dropping capabilities
  no_new_privs,  // PR_SET_NO_NEW_PRIVS
  landlock,      // Landlock restrict_self
  seccomp,       // loading the seccomp filter
  exec,          // execve of every PATH candidate failed
  command,       // a jail built ahead receiving its command
};

// A stable lower-case name for messages ("mount", "no_new_privs").
const char* step_name(Step step);

// One record on the status pipe.
struct StatusRecord {
  enum Kind : uint32_t { setup_failed = 1, command_status = 2 };
  uint32_t kind = 0;
  uint32_t step = 0;         // setup_failed: a Step
  int32_t sys_errno = 0;     // setup_failed: the errno
  int32_t index = -1;        // setup_failed: which op of the step, or -1
  int32_t wait_status = 0;   // command_status: the command's raw wait status
  int32_t cgroups_left = 0;  // command_status: the jail's cgroups the init could not remove
  int32_t git_unsaved = 0;   // command_status: git state files not written back (git_state.h)
  int32_t git_fallback = 0;  // command_status: why .git was read-only as a whole (an errno), or 0
};

// Child side: reports a failed step. Async-signal-safe; a failed write is
// ignored because the exit status still says the setup failed.
inline void report_setup_failure(int fd, Step step, int err, int index = -1) {
  StatusRecord r;
  r.kind = StatusRecord::setup_failed;
  r.step = static_cast<uint32_t>(step);
  r.sys_errno = err;
  r.index = index;
  [[maybe_unused]] ssize_t n = ::write(fd, &r, sizeof r);
}

}  // namespace brig::jail
