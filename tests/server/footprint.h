// What a server left on the machine: for the kill -9 tests, a snapshot of
// every process a server started (its descendants in /proc), the
// namespaces they are in and the cgroups brig made for them, taken while
// the server works; after the kill, what of it is still there.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

namespace brig::server::testing {

// A process as /proc names it: its pid and start time (clock ticks since
// boot), so a pid reused by another process is not taken for it.
struct ProcessId {
  pid_t pid = 0;
  unsigned long long start = 0;
  std::string comm;
};

struct Footprint {
  std::vector<ProcessId> processes;    // root and all its descendants
  std::set<std::string> namespaces;    // "mnt:[4026532…]" of those, but not this test's own
  std::set<std::string> cgroup_dirs;   // the host directories of their cgroups under brig/
  std::vector<std::string> brig_dirs;  // <root's cgroup>/brig in each hierarchy (may not exist)
  int unreadable_namespaces = 0;       // processes whose ns links this user may not read
  unsigned long long taken = 0;        // when the snapshot was taken, in clock ticks since boot
};

// The processes under root (root included), their namespaces and cgroups.
Footprint footprint_of(pid_t root);

// The processes of f that are still running (zombies count as gone: they
// hold no memory, namespace or cgroup).
std::vector<ProcessId> still_running(const Footprint& f);

// One line per thing of f still on the machine: a process, a namespace that
// any process (a link in /proc/*/ns or an open fd) or mount still holds, a
// cgroup directory, or a directory under a brig/ cgroup named for one of
// f's processes ("<pid>-<n>", how brig names its jails' groups). Empty when
// nothing is left. A group named for a brig-spawner still running whose
// processes, if any, are all of a jail that spawner started after f was
// taken is that spawner's, kept for or handed to its next jail
// (jail::cgroups::reuse_empty_groups), not left: it counts again once that
// spawner is gone.
//
// A namespace is named by its inode number, and the kernel gives a freed
// number to the next namespace made (the lowest free one): the jail brig
// builds ahead after a kill gets the killed jail's seven numbers. So a
// process that started after f was taken is not counted as holding one of
// f's namespaces by its /proc/<pid>/ns link: it was not in them then, and
// could have entered them since only through a file descriptor of the
// namespace (which counts, whoever holds it) or by being forked in them by
// a process of f (which is still running then, and counts).
std::vector<std::string> left_of(const Footprint& f);

// Files in dir (recursively) whose names brig's atomic write gives its
// temporary files (".<name>.brig-<16 hex digits>").
std::vector<std::string> brig_temp_files(const std::string& dir);

}  // namespace brig::server::testing
