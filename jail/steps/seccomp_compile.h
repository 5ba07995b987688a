// Compiling the seccomp profile (jail/seccomp_profiles.h) to BPF with
// libseccomp. It costs about 6 ms (libseccomp copies its rule database on
// every rule it adds), as much as a whole jail may cost, so it runs when brig
// is built: brig_seccomp_bpf_gen writes the programs into the jail library,
// and seccomp::prepare only copies them. Tests compile again and compare.
#pragma once

#include "jail/base/error.h"
#include "jail/steps/seccomp.h"

namespace brig::jail::seccomp {

// The profile's two programs (see seccomp.h).
struct Programs {
  Program syscalls;
  Program arguments;
};

// Compiles both programs for x86_64. Fails when libseccomp refuses a rule or
// produces a program the kernel would not load (empty or over BPF_MAXINSNS).
Result<Programs> compile_profile();

}  // namespace brig::jail::seccomp
