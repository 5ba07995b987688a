#include "jail/steps/seccomp.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

// kSyscallTable and kArgumentRules, compiled from jail/seccomp_profiles.cc by
// brig_seccomp_bpf_gen when brig is built (see seccomp_compile.h for why).
#include "jail/seccomp_bpf.inc"

namespace brig::jail::seccomp {
namespace {

int install(ProgramView program) {
  sock_fprog fprog{static_cast<unsigned short>(program.size()),
                   const_cast<sock_filter*>(program.data())};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) return errno;
  return 0;
}

}  // namespace

Result<Prepared> prepare(const SeccompSpec& spec) {
  Prepared prepared;
  if (!spec.enabled) return prepared;
  prepared.syscalls = generated::kSyscallTable;
  prepared.arguments = generated::kArgumentRules;
  prepared.enabled = true;
  return prepared;
}

int apply_in_child(const Prepared& prepared) {
  if (!prepared.enabled) return 0;
  // The kernel runs both and keeps the most severe answer, so the order does
  // not change any verdict.
  if (int err = install(prepared.syscalls)) return err;
  return install(prepared.arguments);
}

}  // namespace brig::jail::seccomp
