// The seccomp profile as data: a verdict for every x86_64 syscall, and the
// refusals that depend on argument values. jail/steps/seccomp_compile turns it
// into BPF when brig is built.
//
// Allow-list, not deny-list: every syscall number up to kHighestKnownSyscall
// has a deliberate verdict in syscall_table(), and any other number (a hole in
// the table, or a syscall added to the kernel after this file was written)
// gets ENOSYS. A deny-list would let a future syscall through unseen, and new
// syscalls are often new ways to do refused things (open_tree_attr, number
// 467, is a mount call). ENOSYS rather than EPERM because it is what an older
// kernel answers, so programs take their fallback path.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace brig::jail::seccomp_profiles {

// What a syscall gets before its arguments are looked at.
enum class Verdict : uint8_t {
  allow,
  eperm,   // refused, as the kernel refuses a caller without the privilege
  enosys,  // "not implemented": callers fall back (glibc: clone3 -> clone)
};

// One x86_64 syscall and its verdict. Numbers, not names, because libseccomp
// 2.5.4 does not know the newest syscalls (457 and up); the names document the
// table and tests check them against libseccomp's own table.
struct SyscallVerdict {
  int number;
  std::string_view name;
  Verdict verdict;
};

// The highest syscall number syscall_table() covers (file_setattr, Linux 6.17;
// Linux 6.18 adds none).
inline constexpr int kHighestKnownSyscall = 469;

// What the filter answers for a number syscall_table() does not list.
inline constexpr Verdict kUnlistedVerdict = Verdict::enosys;

// Every x86_64 syscall 0..kHighestKnownSyscall, in number order. The numbers
// 337..423 are unassigned on x86_64 and absent.
std::span<const SyscallVerdict> syscall_table();

// The x86_64 number of `name` in syscall_table(); -1 if it is not there.
int syscall_number(std::string_view name);

// One argument comparison: (argument[arg] & mask) == value. Every mask fits in
// 32 bits, so the comparison looks only at the low 32 bits, which is all the
// kernel reads of an int-typed argument: a caller cannot slip past it by
// setting high bits (CVE-2019-10063).
struct ArgEquals {
  unsigned arg;
  uint32_t mask;
  uint32_t value;
};

// A refusal by argument: the call fails with `err` when all of `when` hold.
struct ArgumentRule {
  std::string_view syscall;  // a name in syscall_table(), verdict allow
  int err;
  std::vector<ArgEquals> when;  // one or two comparisons, all must hold
};

// Every refusal by argument, for syscalls the table allows.
std::vector<ArgumentRule> argument_rules();

}  // namespace brig::jail::seccomp_profiles
