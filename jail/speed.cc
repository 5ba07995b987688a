#include "jail/speed.h"

#include <mutex>

#include "jail/steps/cgroups.h"
#include "jail/steps/clone.h"

namespace brig::jail::speed {

CpuPlacement CpuPlacement::of_this_process() {
  CpuPlacement p;
  p.known_ = ::sched_getaffinity(0, sizeof p.cpus_, &p.cpus_) == 0;
  return p;
}

void CpuPlacement::move_away(pid_t pid) const {
  if (known_) clone::move_to_other_cpu(pid, cpus_);
}

void CpuPlacement::leave_this_cpu() const {
  if (known_ && clone::move_to_other_cpu(0, cpus_)) ::sched_setaffinity(0, sizeof cpus_, &cpus_);
}

void sweep_once() {
  static std::once_flag once;
  std::call_once(once, [] { cgroups::sweep_stale(); });
}

}  // namespace brig::jail::speed
