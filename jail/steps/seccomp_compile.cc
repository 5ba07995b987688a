#include "jail/steps/seccomp_compile.h"

#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "jail/base/unique_fd.h"
#include "jail/seccomp_profiles.h"

namespace brig::jail::seccomp {
namespace {

namespace profiles = seccomp_profiles;

struct FilterDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Filter = std::unique_ptr<void, FilterDeleter>;

uint32_t action_for(profiles::Verdict verdict) {
  switch (verdict) {
    case profiles::Verdict::allow:
      return SCMP_ACT_ALLOW;
    case profiles::Verdict::eperm:
      return SCMP_ACT_ERRNO(EPERM);
    case profiles::Verdict::enosys:
      return SCMP_ACT_ERRNO(ENOSYS);
  }
  return SCMP_ACT_KILL_PROCESS;
}

// libseccomp returns -errno.
Error libseccomp_error(std::string what, std::string where, int rc) {
  return sys_error("seccomp: " + std::move(what), std::move(where), -rc);
}

Result<Filter> new_filter(uint32_t default_action) {
  Filter filter(seccomp_init(default_action));
  if (!filter) return std::unexpected(Error{"seccomp: seccomp_init", "", "out of memory", ENOMEM});
  // The table is x86_64's, so a syscall made with another convention (i386's
  // int 0x80, or an x32 number, which libseccomp's native check catches by
  // its 0x40000000 bit) could mean anything: kill the whole process.
  if (int rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS))
    return std::unexpected(libseccomp_error("set the bad-architecture action", "", rc));
  // A binary search over the syscall numbers instead of a chain of several
  // hundred comparisons: every syscall the jail makes pays for this filter.
  if (int rc = seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2))
    return std::unexpected(libseccomp_error("ask for a binary-tree filter", "", rc));
  return filter;
}

// libseccomp 2.5 exports BPF only to a file descriptor (seccomp_export_bpf_mem
// arrived in 2.6), so it goes through a memfd.
Result<Program> export_program(const Filter& filter, const std::string& name) {
  UniqueFd fd(memfd_create("brig-seccomp", MFD_CLOEXEC));
  if (!fd) return std::unexpected(sys_error("seccomp: memfd_create", name, errno));
  if (int rc = seccomp_export_bpf(filter.get(), fd.get()))
    return std::unexpected(libseccomp_error("export BPF", name, rc));
  off_t size = lseek(fd.get(), 0, SEEK_END);
  if (size < 0) return std::unexpected(sys_error("seccomp: lseek", name, errno));
  size_t count = static_cast<size_t>(size) / sizeof(sock_filter);
  if (size == 0 || count * sizeof(sock_filter) != static_cast<size_t>(size) ||
      count > BPF_MAXINSNS) {
    return std::unexpected(Error{"seccomp: export BPF", name,
                                 "libseccomp produced " + std::to_string(size) + " bytes, not 1.." +
                                     std::to_string(BPF_MAXINSNS) + " instructions"});
  }
  Program program(count);
  if (pread(fd.get(), program.data(), static_cast<size_t>(size), 0) != size)
    return std::unexpected(sys_error("seccomp: read exported BPF", name, errno));
  return program;
}

// Program 1: every syscall number gets the table's verdict; numbers the table
// does not list get the filter's default, ENOSYS.
Result<Program> compile_syscall_table() {
  Filter filter = BRIG_TRY(new_filter(action_for(profiles::kUnlistedVerdict)));
  for (const profiles::SyscallVerdict& s : profiles::syscall_table()) {
    // libseccomp refuses a rule whose action is the default; those syscalls
    // get the same answer from the default.
    if (s.verdict == profiles::kUnlistedVerdict) continue;
    if (int rc = seccomp_rule_add(filter.get(), action_for(s.verdict), s.number, 0))
      return std::unexpected(libseccomp_error("add rule", std::string(s.name), rc));
  }
  return export_program(filter, "syscall table");
}

// Program 2: allow by default; refuse the argument values the profile names.
Result<Program> compile_argument_rules() {
  Filter filter = BRIG_TRY(new_filter(SCMP_ACT_ALLOW));
  for (const profiles::ArgumentRule& rule : profiles::argument_rules()) {
    int nr = profiles::syscall_number(rule.syscall);
    if (nr < 0) {
      return std::unexpected(
          Error{"seccomp: argument rule", std::string(rule.syscall), "not in the syscall table"});
    }
    std::vector<scmp_arg_cmp> cmps;
    for (const profiles::ArgEquals& c : rule.when)
      cmps.push_back(scmp_arg_cmp{c.arg, SCMP_CMP_MASKED_EQ, c.mask, c.value});
    if (int rc =
            seccomp_rule_add_array(filter.get(), SCMP_ACT_ERRNO(static_cast<uint32_t>(rule.err)),
                                   nr, static_cast<unsigned>(cmps.size()), cmps.data()))
      return std::unexpected(libseccomp_error("add argument rule", std::string(rule.syscall), rc));
  }
  return export_program(filter, "argument rules");
}

}  // namespace

Result<Programs> compile_profile() {
  // The table holds x86_64's numbers; on another architecture they would
  // name other syscalls.
  if (seccomp_arch_native() != SCMP_ARCH_X86_64) {
    return std::unexpected(Error{"seccomp: compile the profile", "",
                                 "brig's syscall table is written for x86_64 only"});
  }
  Programs programs;
  programs.syscalls = BRIG_TRY(compile_syscall_table());
  programs.arguments = BRIG_TRY(compile_argument_rules());
  return programs;
}

}  // namespace brig::jail::seccomp
