// Seccomp: the last layer, installed just before execve. libseccomp compiles
// the profile (jail/seccomp_profiles.h) to classic BPF when brig is built
// (seccomp_compile.h says why); prepare() copies the programs before clone,
// and the child only hands them to the kernel.
//
// Two programs, because libseccomp can give a syscall only one fallback: the
// filter's default. The first gives every syscall number its verdict (unknown
// numbers: ENOSYS); the second, whose default is allow, refuses calls by
// argument value (setuid modes, namespace clone flags, TIOCSTI, socket
// families). The kernel runs every installed filter and keeps the most severe
// result (kill > errno > allow), so a call passes only if both allow it.
#pragma once

#include <linux/filter.h>

#include <span>
#include <vector>

#include "jail/base/error.h"
#include "jail/spec.h"

namespace brig::jail::seccomp {

// One compiled classic-BPF program, as seccomp(SECCOMP_SET_MODE_FILTER) takes it.
using Program = std::vector<sock_filter>;
// One of the programs built into brig (seccomp_bpf.inc), in static storage:
// a jail's plan points to it instead of copying 6.5 KiB.
using ProgramView = std::span<const sock_filter>;

// The compiled filter. Both programs kill the whole process on a syscall made
// with a foreign architecture's convention (i386 int 0x80, x32).
struct Prepared {
  bool enabled = false;   // false = apply_in_child installs nothing
  ProgramView syscalls;   // verdict per syscall number (seccomp_profiles::syscall_table)
  ProgramView arguments;  // refusals by argument (seccomp_profiles::argument_rules)
};

// The compiled profile, ready for apply_in_child; disabled spec = empty
// Prepared. Allocates, so it runs before clone. Never fails today (the
// programs were compiled with brig); Result leaves room for profiles chosen
// by the spec.
Result<Prepared> prepare(const SeccompSpec& spec);

// Installs both programs on the calling thread. Must come after
// PR_SET_NO_NEW_PRIVS (or with CAP_SYS_ADMIN) and last before execve: every
// syscall after it is filtered. Async-signal-safe. Returns 0 or errno.
int apply_in_child(const Prepared& prepared);

}  // namespace brig::jail::seccomp
