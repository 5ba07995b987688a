// The jail's process state: which fds survive, resource limits, signal
// dispositions. Each plan is made before clone; the *_in_child functions are
// async-signal-safe and return 0 or errno.
#pragma once

#include <sys/resource.h>

#include <vector>

#include "jail/base/error.h"
#include "jail/spec.h"

namespace brig::jail::process {

// Fds the child keeps, each moved to a fixed number; every other fd is
// closed. Sources may collide with targets (stdout_fd = 2, …): all are
// first duplicated above every number involved.
struct FdPlan {
  struct Move {
    int from = -1;
    int to = -1;
    bool cloexec = false;  // true for brig's own fds, so execve closes them
  };
  std::vector<Move> moves;
  int first_unused = 0;  // every fd from here, and every one below that is no move's
                         // target, is closed after the moves
};

// Moves and closes per `plan`. Returns 0 or errno.
int arrange_fds_in_child(const FdPlan& plan);

// One setrlimit call.
struct Rlimit {
  int resource = 0;
  struct rlimit value {};
  friend bool operator==(const Rlimit& a, const Rlimit& b) {
    return a.resource == b.resource && a.value.rlim_cur == b.value.rlim_cur &&
           a.value.rlim_max == b.value.rlim_max;
  }
};

// The rlimits for `limits`: cpu, file size and open files; pids (+1 for the
// init) as RLIMIT_NPROC (counted per user namespace since Linux 5.14) and
// memory as RLIMIT_DATA, the stand-ins for a pids and a memory cgroup, which
// apply_rlimits_in_child skips where a cgroup sets that limit (the plan is
// made before the cgroups are). Each value is capped at the caller's hard
// limit, which an unprivileged process cannot raise. Reads getrlimit.
std::vector<Rlimit> plan_rlimits(const Limits& limits);

// setrlimit for each entry but the stand-ins for a cgroup's limit
// (RLIMIT_NPROC when `cgroup_pids`, RLIMIT_DATA when `cgroup_memory`); on
// failure *failed is the entry's index.
int apply_rlimits_in_child(const std::vector<Rlimit>& rlimits, bool cgroup_pids, bool cgroup_memory,
                           int* failed);

// setresgid + setresuid to `uid`/`gid` keeping the capabilities (which
// caps::apply_in_child then drops, and which it needs to drop the bounding
// set): PR_SET_KEEPCAPS, the switch, then the effective set restored from
// the permitted one. Returns 0 or errno.
int switch_ids_in_child(uid_t uid, gid_t gid);

// Sheds every supplementary group (setgroups(0)). Raw syscall, as for the
// ids: glibc's setgroups is a broadcast to a thread list the clone has
// stale. Returns 0 or errno.
int drop_groups_in_child();

// Every signal back to its default disposition and an empty signal mask:
// ignored signals and the mask survive execve.
int reset_signals_in_child();

// Whole pages of memory, [begin, begin + size).
struct PageRange {
  char* begin = nullptr;
  size_t size = 0;
};

// The pages of this program's read-only loadable segments (its code and
// constants), for release_code_pages. Made before clone.
std::vector<PageRange> code_pages();

// Drops this process's mappings of `ranges` (madvise MADV_DONTNEED): a
// launcher that only waits, or a jail's init, keeps resident only the code
// it runs from then on, instead of everything it ran while setting up (its
// proportional set size while the command runs). Sound because these are
// read-only, file-backed, private mappings of a position-independent
// program: nothing ever writes them, so no page holds a private copy; the
// pages stay in the page cache and a later access maps them again, as after
// reclaim. Errors are ignored (it only saves memory). Async-signal-safe.
void release_code_pages(const std::vector<PageRange>& ranges);

}  // namespace brig::jail::process
