// Memory and pids limits through cgroups, in DESIGN.md's tiers: a delegated
// cgroup v2 subtree; else the v1 pids and memory controllers (root on a
// v1/v2 hybrid host); else nothing here, and the launcher falls back to
// RLIMIT_NPROC / RLIMIT_DATA. Groups live under brig's own cgroup, in
// <own>/brig/<launcher pid>-<n>, so a killed brig's leftovers are found and
// swept by the next one.
//
// Only the command's process tree is placed in the group (the command joins
// it before execve): the init stays outside so that, once the jail's other
// processes are dead, it can remove the group even when its launcher was
// killed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "jail/base/unique_fd.h"
#include "jail/layer_report.h"
#include "jail/spec.h"

namespace brig::jail::cgroups {

// One jail's cgroups (one per v1 hierarchy, or one v2 group).
struct Group {
  LimitsTier tier = LimitsTier::none;  // none = no cgroup limits (see detail)
  bool limits_pids = false;            // pids.max is set
  bool limits_memory = false;          // the memory limit is set
  std::string name;                    // the group's directory name under each brig dir
  std::vector<std::string> paths;      // the group directories (for remove())
  std::vector<UniqueFd>
      procs_fds;  // each group's join file (v2 cgroup.procs, v1 tasks), for writing
  std::vector<UniqueFd> brig_dir_fds;  // each group's parent (".../brig"), for the init's unlinkat
  std::string
      detail;  // why a tier was not used ("cgroup v2 …: no pids controller"); empty if all applied
};

// Makes the groups for `limits` (memory_bytes, pids). Never fails: a tier
// that cannot be used is recorded in detail and the next one is tried.
Group create(const Limits& limits);

// Removes the groups (the init has usually done it); retried briefly while
// the kernel still counts exiting tasks. Idempotent.
void remove(Group& group);

// Removes groups whose launcher pid is gone and which hold no process.
// Returns how many were removed.
int sweep_stale();

// Child side: moves the calling process, single-threaded, into every group
// by writing "0" to each join fd (the child's numbers for Group::procs_fds).
// Returns 0 or errno, with the failed hierarchy's index in *failed.
int join_in_child(const std::vector<int>& procs_fds, int* failed);

// Child side (the init, after every jail process is reaped): rmdir `name`
// under each brig directory fd (the child's numbers for Group::brig_dir_fds).
// Returns how many it could not remove (the launcher retries those).
int remove_in_child(const std::vector<int>& brig_dir_fds, const std::string& name);

}  // namespace brig::jail::cgroups
