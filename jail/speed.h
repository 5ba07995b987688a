// Speed measures of the launcher that change nothing the jail enforces, kept
// out of the ordered steps (docs/jail.md, "Speed"): CPU placement, the
// sweep of a killed brig's cgroups. (The code-page release is
// process::release_code_pages; the step stamps are step_times.h.)
#pragma once

#include <sched.h>
#include <sys/types.h>

namespace brig::jail::speed {

// A new process starts on its parent's CPU and waits there while the parent
// runs, even with other CPUs idle: the launcher moves the network
// namespace's helper elsewhere, and itself once the child needs nothing
// more from it, so the child keeps its CPU to itself.
class CpuPlacement {
 public:
  // The caller's allowed CPUs, read once (after clone3).
  static CpuPlacement of_this_process();
  // Moves `pid` off the caller's CPU (clone::move_to_other_cpu).
  void move_away(pid_t pid) const;
  // Moves the caller off its CPU, taking back its whole mask once there.
  void leave_this_cpu() const;

 private:
  cpu_set_t cpus_{};
  bool known_ = false;
};

// Once per process: removes the cgroups a killed brig left behind. ~0.05 ms
// of /proc and cgroup reads, so run after the child is on its own; a live
// launcher's groups are named for it and never swept.
void sweep_once();

}  // namespace brig::jail::speed
