// A classic-BPF interpreter for seccomp programs, for tests only: it runs the
// programs brig compiles over a seccomp_data of our choosing, so every verdict
// can be checked without a kernel, including argument values no real caller
// would pass.
#pragma once

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace brig::jail::testing {

// One syscall as seccomp sees it.
struct SyscallCall {
  int nr = 0;
  uint32_t arch = AUDIT_ARCH_X86_64;
  std::array<uint64_t, 6> args{};
};

// Runs `program` over `call` as the kernel's seccomp would and returns the
// SECCOMP_RET_* value. Throws std::runtime_error for what the kernel's filter
// checker refuses: an opcode seccomp does not allow, a jump or load out of
// range, or falling off the end.
uint32_t run_bpf(std::span<const sock_filter> program, const SyscallCall& call);

// Runs several programs, listed in installation order, and combines them as
// the kernel does: the most severe action wins (the lowest action value), and
// among equal actions the most recently installed program's value.
uint32_t run_filters(std::span<const std::span<const sock_filter>> programs,
                     const SyscallCall& call);

}  // namespace brig::jail::testing
