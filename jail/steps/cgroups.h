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
//
// The launcher makes the groups after clone3, while the child builds the
// jail, and hands them over the sync socket (send_to_child,
// receive_in_child): making them costs ~0.2 ms as root, which then delays
// nothing.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
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
  std::vector<ino_t> inos;             // their inode numbers: a spare still there is the same
  std::vector<UniqueFd>
      procs_fds;  // each group's join file (v2 cgroup.procs, v1 tasks), for writing
  std::vector<UniqueFd> brig_dir_fds;  // each group's parent (".../brig"), for the init's unlinkat
  std::string
      detail;  // why a tier was not used ("cgroup v2 …: no pids controller"); empty if all applied
  // The limits create() was asked for: a spare group serves only a jail
  // asked for the same (reuse_empty_groups).
  std::optional<uint64_t> asked_pids;
  std::optional<uint64_t> asked_memory;
  // The init leaves the groups to its launcher, which reuses or removes
  // them (made while reuse_empty_groups is on).
  bool launcher_keeps = false;
};

// The leaf brig-server (or brig run) moves itself into inside a delegated
// cgroup v2 subtree; jails' groups then go beside it, in <subtree>/brig.
inline constexpr const char* kLeafName = "brig-server";

// Where brig runs in a delegated cgroup v2 subtree (systemd-run --user
// --scope -p Delegate=yes …), moves this process into <own>/brig-server and
// enables the memory and pids controllers for <own>'s children: the kernel
// hands controllers down only from a cgroup that holds no process itself
// (EBUSY otherwise), which is what kept the v2 tier from working under
// such a scope. Call it first thing, single-threaded: processes started
// later (the spawner, the jails) start in the leaf. Does nothing where there
// is no such subtree (no v2 memory or pids controller, not writable).
// Returns what it did, or why it could not, for the log; empty when there
// was nothing to do.
std::string enter_delegated_leaf();

// Makes the groups for `limits` (memory_bytes, pids). Never fails: a tier
// that cannot be used is recorded in detail and the next one is tried.
Group create(const Limits& limits);

// How `limits` would hold for a jail made now by this process: makes the
// groups as create() does and removes them at once (~0.2 ms). brig-server
// asks once at start, to say the truth in its MCP instructions and audit
// log; a limit not asked for counts as whole (there is nothing to break).
LimitsEnforcement probe(const Limits& limits);

// Removes the groups, or keeps them as a spare (reuse_empty_groups). Tasks
// killed with the jail may still be leaving them
// (rmdir: EBUSY): remove() retries for up to 2 s, or, in a process that
// deferred busy removals, tries once and keeps the busy ones for
// retry_deferred. (The init's own try, remove_in_child, fails in the v1
// tier, where its ids are not root's.) Idempotent.
void remove(Group& group);

// From now on (`on`), remove() never waits: brig-spawner serves every jail
// from one loop, and one jail's slow end (a fork bomb's thousands of exits, a
// task stuck in the kernel) must not hold up the others for seconds.
void defer_busy_removals(bool on);

// Tries the groups remove() kept again, when due: those now empty go; one
// still busy a minute after its jail ended is given up and named in
// *given_up (sweep_stale removes it when brig next starts). Returns when to
// call again, or nullopt when nothing is kept.
std::optional<std::chrono::steady_clock::time_point> retry_deferred(
    std::vector<std::string>* given_up);

// Waits up to 2 s for the groups remove() kept (at exit).
void finish_deferred();

// From now on (`on`), remove() keeps a whole group its jail has left (no
// process or counted task in it, at most kSpareChargeMax of memory and of
// memory+swap still charged) for create() to hand to the next jail asked
// with the same limits, its limit files checked and its directories the
// same (at most kMaxSpares wait). A jail's groups cost ~0.4 ms of CPU as
// root in the v1 tier (two mkdirs, the limits written, two rmdirs and the
// kernel's work to free a memory cgroup), a tenth of a pooled `exec`;
// brig-spawner makes one set per call. What a reused group keeps of the
// jail before: event and peak counters and memory.stat, which brig never
// reads, and up to kSpareChargeMax of charged memory, which the next jail's
// limit counts (docs/server.md). Off: the spares are removed.
void reuse_empty_groups(bool on);
inline constexpr int kMaxSpares = 4;
inline constexpr uint64_t kSpareChargeMax = 1u << 20;

// Removes groups whose launcher pid is gone and which hold no process.
// Returns how many were removed.
int sweep_stale();

// A Group as the jail's child holds it, its fds at the child's own numbers.
// Fixed size: the child cannot allocate.
struct Received {
  static constexpr int kMaxGroups = 4;  // one per hierarchy (v2, or v1 pids and memory)
  int count = 0;
  int procs_fds[kMaxGroups] = {};  // Group::procs_fds
  int dir_fds[kMaxGroups] = {};    // Group::brig_dir_fds
  bool limits_pids = false;        // Group::limits_pids
  bool limits_memory = false;      // Group::limits_memory
  bool launcher_keeps = false;     // Group::launcher_keeps: remove_in_child leaves them
  char name[32] = {};              // Group::name
};

// Launcher side: sends `group` (its fds with SCM_RIGHTS, its name and the
// limits it sets) to the jail's child over the stream socket `sock`.
// Returns 0 or errno.
int send_to_child(int sock, const Group& group);

// Child side: waits for send_to_child's message on `sock`. Returns 0 or
// errno (EPIPE: the launcher closed the socket instead). Async-signal-safe.
int receive_in_child(int sock, Received* out);

// Child side: moves the calling process, single-threaded, into every group
// by writing "0" to each join fd. Returns 0 or errno, with the failed
// hierarchy's index in *failed.
int join_in_child(const Received& groups, int* failed);

// Child side (the init, after every jail process is reaped): rmdir each
// group, unless its launcher keeps them. Returns how many it did not remove
// (the launcher removes, or reuses, those).
int remove_in_child(const Received& groups);

}  // namespace brig::jail::cgroups
