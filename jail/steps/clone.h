// Process creation for the jail. glibc 2.36 has no clone3() wrapper, and
// after a raw clone the child's cached thread id is stale, so the child may
// use only async-signal-safe calls; vfork_on_stack() lets the jail's init
// start the command without glibc's fork bookkeeping for the same reason.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <cstdint>

#include "jail/base/unique_fd.h"
#include "jail/spec.h"

namespace brig::jail::clone {

// The CLONE_NEW* flags for `namespaces` (net only when `new_net`).
uint64_t namespace_flags(const Namespaces& namespaces, bool new_net);

// clone3 with CLONE_PIDFD | `flags`, exit signal SIGCHLD, no CLONE_VFORK (the
// parent must write the uid/gid maps while the child waits). Like fork():
// returns the child's pid in the parent (and sets *pidfd), 0 in the child,
// -1 with errno on failure.
pid_t clone3_with_pidfd(uint64_t flags, int* pidfd);

// Runs fn(arg) in a child that shares the caller's memory until it calls
// execve or exits (CLONE_VM | CLONE_VFORK, exit signal SIGCHLD, as
// posix_spawn does), on `stack` (stack_size bytes). The caller is suspended
// meanwhile, so nothing of its memory is copied, and fn must only read it
// (async-signal-safe calls, no allocation; a jail built ahead's command
// also writes the command it receives, into storage the caller reads only
// once fn has called execve). Every credential, limit, signal
// disposition, cwd and seccomp/Landlock domain stays the child's own: none
// of CLONE_THREAD, CLONE_SIGHAND or CLONE_FS is set. Returns the child's pid
// or -1 with errno.
pid_t vfork_on_stack(int (*fn)(void*), void* arg, char* stack, size_t stack_size);

// For every function that runs on vfork_on_stack's stack and may end in a
// noreturn call (_exit, execve): AddressSanitizer does not know that stack,
// and its unpoisoning of "the current stack" before such calls would warn
// on the command's stderr, so they are left uninstrumented. (No effect in
// other builds.)
#define BRIG_ON_VFORK_STACK __attribute__((no_sanitize("address")))

// Moves `pid` (0: the caller) to the CPUs of `allowed` but the one the
// caller runs on, if there is another; returns whether it did. A new process
// starts on its parent's CPU and waits there until the parent sleeps, even
// with other CPUs idle (a scheduler that packs tasks onto few CPUs, as this
// project's VMs do, keeps it there); moved, both run at once. The move
// narrows the mask: a process that lives on restores `allowed` once it runs
// where it was sent. Async-signal-safe.
bool move_to_other_cpu(pid_t pid, const cpu_set_t& allowed);

// A child process of the caller's that does bounded work and exits (the
// network namespace's helper): waited for and reaped when this goes.
// Move-only.
class Reaped {
 public:
  Reaped(pid_t pid, int pidfd) : pid_(pid), pidfd_(pidfd) {}
  Reaped(Reaped&&) noexcept = default;
  Reaped& operator=(Reaped&&) = delete;
  ~Reaped();
  pid_t pid() const { return pid_; }
  // Polls readable once the process has exited (reaping then does not block).
  int pidfd() const { return pidfd_.get(); }

 private:
  pid_t pid_;
  UniqueFd pidfd_;
};

}  // namespace brig::jail::clone
