#include "jail/steps/clone.h"

#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace brig::jail::clone {

uint64_t namespace_flags(const Namespaces& ns, bool new_net) {
  uint64_t f = 0;
  if (ns.user) f |= CLONE_NEWUSER;
  if (ns.mount) f |= CLONE_NEWNS;
  if (ns.pid) f |= CLONE_NEWPID;
  if (ns.ipc) f |= CLONE_NEWIPC;
  if (ns.uts) f |= CLONE_NEWUTS;
  if (ns.net && new_net) f |= CLONE_NEWNET;
  if (ns.cgroup) f |= CLONE_NEWCGROUP;
  return f;
}

pid_t clone3_with_pidfd(uint64_t flags, int* pidfd) {
  clone_args args{};
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  // stack = 0: the child runs on a copy of the caller's stack, like fork().
  return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
}

pid_t vfork_on_stack(int (*fn)(void*), void* arg, char* stack, size_t stack_size) {
  // The stack grows down on every architecture brig builds for. glibc's
  // clone() switches to it before calling fn and never returns into the
  // caller's frames in the child.
  return ::clone(fn, stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
}

bool move_to_other_cpu(pid_t pid, const cpu_set_t& allowed) {
  unsigned cpu = 0;
  if (::syscall(SYS_getcpu, &cpu, nullptr, nullptr) != 0) return false;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  return CPU_COUNT(&others) > 0 && ::sched_setaffinity(pid, sizeof others, &others) == 0;
}

Reaped::~Reaped() {
  if (!pidfd_) return;  // moved from
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                  WEXITED) != 0 &&
         errno == EINTR) {
  }
}

}  // namespace brig::jail::clone
