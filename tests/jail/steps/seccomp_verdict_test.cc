// Verdicts of the compiled seccomp filter, per syscall and argument, read by
// running the exported BPF through a test interpreter (no kernel involved).
// The expectations come from the list and from libseccomp's own
// syscall table, not from brig's profile, except where a test checks that the
// compiled filter matches the profile's table for every number.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>

#include "jail/seccomp_profiles.h"
#include "jail/steps/seccomp.h"
#include "jail/steps/seccomp_compile.h"
#include "tests/jail/steps/bpf_interpreter.h"

namespace brig::jail {
namespace {

using testing::SyscallCall;
namespace profiles = seccomp_profiles;

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t refused(int err) {
  return SECCOMP_RET_ERRNO | static_cast<uint32_t>(err);
}
constexpr uint64_t kHigh = uint64_t{1} << 32;  // garbage in the upper half of an int argument

class SeccompVerdict : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto prepared = seccomp::prepare(SeccompSpec{});
    ASSERT_TRUE(prepared) << prepared.error().to_string();
    prepared_ = new seccomp::Prepared(std::move(*prepared));
  }
  static void TearDownTestSuite() {
    delete prepared_;
    prepared_ = nullptr;
  }

  // The verdict of both programs, installed in apply_in_child's order.
  static uint32_t verdict(const SyscallCall& call) {
    const std::span<const sock_filter> programs[] = {prepared_->syscalls, prepared_->arguments};
    return testing::run_filters(programs, call);
  }
  static uint32_t verdict(int nr, std::initializer_list<uint64_t> args = {}) {
    SyscallCall call;
    call.nr = nr;
    size_t i = 0;
    for (uint64_t a : args) call.args[i++] = a;
    return verdict(call);
  }
  // The x86_64 number libseccomp knows for `name`: an oracle independent of
  // brig's table.
  static int nr(const char* name) {
    int n = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name);
    EXPECT_GE(n, 0) << name << " is unknown to libseccomp";
    return n;
  }

  static seccomp::Prepared* prepared_;
};
seccomp::Prepared* SeccompVerdict::prepared_ = nullptr;

uint32_t action_of(profiles::Verdict v) {
  switch (v) {
    case profiles::Verdict::allow:
      return kAllow;
    case profiles::Verdict::eperm:
      return refused(EPERM);
    case profiles::Verdict::enosys:
      return refused(ENOSYS);
  }
  return 0;
}

TEST_F(SeccompVerdict, InterpreterFollowsJumpsAndReturns) {
  // if (nr == 7) return ERRNO(3) else return ALLOW
  std::vector<sock_filter> program = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 7, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, refused(3)),
      BPF_STMT(BPF_RET | BPF_K, kAllow),
  };
  EXPECT_EQ(testing::run_bpf(program, {.nr = 7}), refused(3));
  EXPECT_EQ(testing::run_bpf(program, {.nr = 8}), kAllow);
  std::vector<sock_filter> falls_off = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};
  EXPECT_THROW(testing::run_bpf(falls_off, {}), std::runtime_error);
}

bool same(std::span<const sock_filter> a, std::span<const sock_filter> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof a[0]) == 0;
}

// The programs built into brig are what the profile compiles to now.
TEST_F(SeccompVerdict, EmbeddedProgramsAreTheCompiledProfile) {
  auto compiled = seccomp::compile_profile();
  ASSERT_TRUE(compiled) << compiled.error().to_string();
  EXPECT_TRUE(same(compiled->syscalls, prepared_->syscalls));
  EXPECT_TRUE(same(compiled->arguments, prepared_->arguments));
}

TEST_F(SeccompVerdict, ProgramsFitTheKernelLimit) {
  EXPECT_GT(prepared_->syscalls.size(), 0u);
  EXPECT_LE(prepared_->syscalls.size(), size_t{BPF_MAXINSNS});
  EXPECT_GT(prepared_->arguments.size(), 0u);
  EXPECT_LE(prepared_->arguments.size(), size_t{BPF_MAXINSNS});
}

TEST_F(SeccompVerdict, TableIsOrderedAndNamesMatchLibseccomp) {
  std::set<std::string_view> names;
  int previous = -1;
  for (const auto& s : profiles::syscall_table()) {
    EXPECT_GT(s.number, previous) << s.name;
    previous = s.number;
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
    char* known = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, s.number);
    if (known != nullptr) {
      EXPECT_EQ(s.name, known) << "number " << s.number;
      std::free(known);
    }
  }
  EXPECT_EQ(previous, profiles::kHighestKnownSyscall);
}

// Every number up to the newest syscall gets a verdict someone chose: either
// the table lists it, or it is one of x86_64's unassigned numbers 337..423.
// This is the first program alone; the second may refuse by argument.
TEST_F(SeccompVerdict, EveryNumberHasADeliberateVerdict) {
  auto table_verdict = [](int n) { return testing::run_bpf(prepared_->syscalls, {.nr = n}); };
  std::map<int, const profiles::SyscallVerdict*> listed;
  for (const auto& s : profiles::syscall_table()) listed[s.number] = &s;
  for (int n = 0; n <= profiles::kHighestKnownSyscall; ++n) {
    char* known = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, n);
    bool libseccomp_knows = known != nullptr;
    std::free(known);
    auto it = listed.find(n);
    if (it == listed.end()) {
      EXPECT_FALSE(libseccomp_knows) << "syscall " << n << " is missing from the table";
      EXPECT_TRUE(n >= 337 && n <= 423) << "syscall " << n << " is missing from the table";
      EXPECT_EQ(table_verdict(n), refused(ENOSYS)) << "unassigned number " << n;
    } else {
      EXPECT_EQ(table_verdict(n), action_of(it->second->verdict)) << it->second->name;
    }
  }
}

// The second program looks only at the syscalls its rules name: for any
// other, whatever the arguments, it allows.
TEST_F(SeccompVerdict, ArgumentProgramLeavesOtherSyscallsAlone) {
  std::set<int> checked;
  for (const auto& rule : profiles::argument_rules())
    checked.insert(profiles::syscall_number(rule.syscall));
  EXPECT_EQ(checked.size(),
            13u);  // ioctl, socket, socketpair, clone, 6 chmod/mknod, open, openat, creat
  for (int n = 0; n <= profiles::kHighestKnownSyscall + 10; ++n) {
    if (checked.contains(n)) continue;
    for (uint64_t fill : {uint64_t{0}, ~uint64_t{0}, uint64_t{04755}, uint64_t{TIOCSTI}}) {
      SyscallCall call{.nr = n};
      call.args.fill(fill);
      EXPECT_EQ(testing::run_bpf(prepared_->arguments, call), kAllow) << n << " " << fill;
    }
  }
}

TEST_F(SeccompVerdict, NumbersBeyondTheTableAreNotImplemented) {
  for (int n : {470, 471, 500, 511, 512, 547, 548, 1000, 4095}) {
    EXPECT_EQ(verdict(n), refused(ENOSYS)) << n;
  }
}

TEST_F(SeccompVerdict, ForeignArchitecturesAreKilled) {
  EXPECT_EQ(verdict({.nr = 20, .arch = AUDIT_ARCH_I386}), kKill);      // i386 getpid
  EXPECT_EQ(verdict({.nr = 21, .arch = AUDIT_ARCH_I386}), kKill);      // i386 mount
  EXPECT_EQ(verdict({.nr = 172, .arch = AUDIT_ARCH_AARCH64}), kKill);  // arm64 getpid
  // x32 uses x86_64's arch value with bit 30 set in the number.
  constexpr int kX32 = 0x40000000;
  EXPECT_EQ(verdict(kX32 | SYS_getpid), kKill);
  EXPECT_EQ(verdict(kX32 | SYS_mount), kKill);
  EXPECT_EQ(verdict(kX32 | 520), kKill);  // x32 execve
}

TEST_F(SeccompVerdict, PrivilegedFamiliesArePermissionDenied) {
  for (const char* name : {"mount",
                           "umount2",
                           "fsopen",
                           "fsconfig",
                           "fsmount",
                           "fspick",
                           "move_mount",
                           "open_tree",
                           "mount_setattr",
                           "pivot_root",
                           "chroot",
                           "ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "bpf",
                           "perf_event_open",
                           "userfaultfd",
                           "keyctl",
                           "add_key",
                           "request_key",
                           "kexec_load",
                           "kexec_file_load",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "reboot",
                           "swapon",
                           "swapoff",
                           "settimeofday",
                           "clock_settime",
                           "clock_adjtime",
                           "adjtimex",
                           "open_by_handle_at",
                           "unshare",
                           "setns"}) {
    EXPECT_EQ(verdict(nr(name)), refused(EPERM)) << name;
    // Whatever the arguments.
    EXPECT_EQ(verdict(nr(name), {~uint64_t{0}, 1, 2, 3, 4, 5}), refused(EPERM)) << name;
  }
  EXPECT_EQ(verdict(467), refused(EPERM)) << "open_tree_attr";
  EXPECT_EQ(verdict(460), refused(EPERM)) << "lsm_set_self_attr";
}

TEST_F(SeccompVerdict, UnreadableArgumentStructsAreNotImplemented) {
  for (const char* name :
       {"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register", "openat2"}) {
    EXPECT_EQ(verdict(nr(name)), refused(ENOSYS)) << name;
  }
}

TEST_F(SeccompVerdict, NewerThanLibseccompHaveVerdictsByNumber) {
  const std::map<int, uint32_t> expected = {
      {335, kAllow},          // uretprobe
      {336, kAllow},          // uprobe
      {457, kAllow},          // statmount
      {458, kAllow},          // listmount
      {459, kAllow},          // lsm_get_self_attr
      {460, refused(EPERM)},  // lsm_set_self_attr
      {461, kAllow},          // lsm_list_modules
      {462, kAllow},          // mseal
      {463, kAllow},          // setxattrat
      {464, kAllow},          // getxattrat
      {465, kAllow},          // listxattrat
      {466, kAllow},          // removexattrat
      {467, refused(EPERM)},  // open_tree_attr
      {468, kAllow},          // file_getattr
      {469, kAllow},          // file_setattr
  };
  for (const auto& [n, v] : expected) EXPECT_EQ(verdict(n), v) << n;
}

TEST_F(SeccompVerdict, OrdinaryCallsAreAllowed) {
  for (const char* name : {"read",
                           "write",
                           "close",
                           "mmap",
                           "execve",
                           "execveat",
                           "fork",
                           "vfork",
                           "wait4",
                           "getpid",
                           "futex",
                           "rseq",
                           "seccomp",
                           "prctl",
                           "landlock_create_ruleset",
                           "landlock_restrict_self",
                           "pidfd_open",
                           "close_range",
                           "getrandom",
                           "memfd_create",
                           "statx",
                           "kill"}) {
    EXPECT_EQ(verdict(nr(name)), kAllow) << name;
  }
}

TEST_F(SeccompVerdict, TerminalInjectionIoctlsAreRefusedOnTheLow32Bits) {
  const int ioctl = nr("ioctl");
  for (uint64_t cmd : {uint64_t{TIOCSTI}, uint64_t{TIOCLINUX}}) {
    EXPECT_EQ(verdict(ioctl, {0, cmd}), refused(EPERM)) << cmd;
    // The kernel reads cmd as an unsigned int: high bits must not hide it.
    EXPECT_EQ(verdict(ioctl, {0, kHigh | cmd}), refused(EPERM)) << cmd;
    EXPECT_EQ(verdict(ioctl, {0, 0xffffffff00000000 | cmd}), refused(EPERM)) << cmd;
  }
  EXPECT_EQ(verdict(ioctl, {0, TIOCGWINSZ}), kAllow);
  EXPECT_EQ(verdict(ioctl, {0, kHigh | TIOCGWINSZ}), kAllow);
  EXPECT_EQ(verdict(ioctl, {0, TIOCSTI + 1}), kAllow);
  EXPECT_EQ(verdict(ioctl, {0, FIONREAD}), kAllow);
}

TEST_F(SeccompVerdict, SocketFamiliesAreAllowListed) {
  const std::set<uint64_t> allowed = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
  for (const char* name : {"socket", "socketpair"}) {
    for (uint64_t family = 0; family <= 64; ++family) {
      uint32_t want = allowed.contains(family) ? kAllow : refused(EAFNOSUPPORT);
      EXPECT_EQ(verdict(nr(name), {family, SOCK_STREAM, 0}), want) << name << " " << family;
      EXPECT_EQ(verdict(nr(name), {kHigh | family, SOCK_STREAM, 0}), want)
          << name << " " << family << " with high bits";
    }
    for (uint64_t family : {uint64_t{255}, uint64_t{65535}, uint64_t{0x7fffffff},
                            uint64_t{0x80000000}, uint64_t{0xffffffff}, ~uint64_t{0}}) {
      EXPECT_EQ(verdict(nr(name), {family, SOCK_STREAM, 0}), refused(EAFNOSUPPORT))
          << name << " " << family;
    }
  }
}

TEST_F(SeccompVerdict, RawAndPacketSocketsAreRefused) {
  const int socket = nr("socket");
  for (uint64_t family : {AF_INET, AF_INET6}) {
    for (uint64_t type : {uint64_t{SOCK_RAW}, uint64_t{SOCK_PACKET}}) {
      EXPECT_EQ(verdict(socket, {family, type, 0}), refused(EPERM)) << family << " " << type;
      EXPECT_EQ(verdict(socket, {family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0}), refused(EPERM))
          << family << " " << type << " with flags";
      EXPECT_EQ(verdict(socket, {kHigh | family, kHigh | type, 0}), refused(EPERM))
          << family << " " << type << " with high bits";
    }
    EXPECT_EQ(verdict(socket, {family, SOCK_STREAM | SOCK_CLOEXEC, 0}), kAllow) << family;
    EXPECT_EQ(verdict(socket, {family, SOCK_DGRAM, IPPROTO_ICMP}), kAllow) << family;
  }
  EXPECT_EQ(verdict(socket, {AF_NETLINK, SOCK_RAW, 0}), kAllow);
  EXPECT_EQ(verdict(socket, {AF_UNIX, SOCK_SEQPACKET, 0}), kAllow);
  EXPECT_EQ(verdict(socket, {AF_PACKET, SOCK_RAW, 0}), refused(EAFNOSUPPORT));
}

TEST_F(SeccompVerdict, CloneCannotAskForNamespaces) {
  const int clone = nr("clone");
  for (uint64_t ns : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                      CLONE_NEWPID, CLONE_NEWNET}) {
    EXPECT_EQ(verdict(clone, {ns | SIGCHLD}), refused(EPERM)) << ns;
    EXPECT_EQ(verdict(clone, {kHigh | ns | SIGCHLD}), refused(EPERM)) << ns;
  }
  // What glibc passes for fork, pthread_create and posix_spawn.
  EXPECT_EQ(verdict(clone, {CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD}), kAllow);
  EXPECT_EQ(
      verdict(clone, {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                      CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID}),
      kAllow);
  EXPECT_EQ(verdict(clone, {CLONE_VM | CLONE_VFORK | SIGCHLD}), kAllow);
}

TEST_F(SeccompVerdict, SetuidAndSetgidModesAreRefused) {
  // {syscall, index of the mode argument}
  const std::pair<const char*, int> calls[] = {{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2},
                                               {"creat", 1}, {"mknod", 1},  {"mknodat", 2}};
  auto call_with_mode = [](int n, int mode_arg, uint64_t mode) {
    SyscallCall call{.nr = n};
    call.args[mode_arg] = mode;
    return call;
  };
  std::vector<std::pair<int, int>> numbered;
  for (const auto& [name, arg] : calls) numbered.push_back({nr(name), arg});
  numbered.push_back({452, 2});  // fchmodat2
  for (const auto& [n, arg] : numbered) {
    for (uint64_t mode : {04755, 02755, 06755, 04000, 02000}) {
      EXPECT_EQ(verdict(call_with_mode(n, arg, mode)), refused(EPERM)) << n << " " << mode;
      EXPECT_EQ(verdict(call_with_mode(n, arg, kHigh | mode)), refused(EPERM)) << n << " " << mode;
    }
    for (uint64_t mode : {0755, 0644, 01777, 0}) {
      EXPECT_EQ(verdict(call_with_mode(n, arg, mode)), kAllow) << n << " " << mode;
      EXPECT_EQ(verdict(call_with_mode(n, arg, kHigh | mode)), kAllow) << n << " " << mode;
    }
  }
  EXPECT_EQ(verdict(nr("mknod"), {0, S_IFIFO | 04644, 0}), refused(EPERM));
  EXPECT_EQ(verdict(nr("mknod"), {0, S_IFIFO | 0644, 0}), kAllow);
}

TEST_F(SeccompVerdict, OpenRefusesSetuidModesOnlyWhenCreating) {
  // {syscall, flags argument}; the mode is the next argument.
  for (const auto& [n, flags_arg] : {std::pair{nr("open"), 1}, std::pair{nr("openat"), 2}}) {
    auto open_call = [n = n, flags_arg = flags_arg](uint64_t flags, uint64_t mode) {
      SyscallCall call{.nr = n};
      call.args[flags_arg] = flags;
      call.args[flags_arg + 1] = mode;
      return call;
    };
    for (uint64_t mode : {04755, 02644, 06755}) {
      EXPECT_EQ(verdict(open_call(O_CREAT | O_WRONLY, mode)), refused(EPERM)) << n << " " << mode;
      EXPECT_EQ(verdict(open_call(O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, mode)), refused(EPERM));
      EXPECT_EQ(verdict(open_call(kHigh | O_CREAT, kHigh | mode)), refused(EPERM));
      EXPECT_EQ(verdict(open_call(O_TMPFILE | O_RDWR, mode)), refused(EPERM)) << n << " " << mode;
      // The mode is ignored unless the call creates a file.
      EXPECT_EQ(verdict(open_call(O_RDONLY, mode)), kAllow) << n << " " << mode;
      EXPECT_EQ(verdict(open_call(O_DIRECTORY | O_RDONLY, mode)), kAllow) << n << " " << mode;
    }
    EXPECT_EQ(verdict(open_call(O_CREAT | O_WRONLY, 0644)), kAllow) << n;
    EXPECT_EQ(verdict(open_call(O_TMPFILE | O_RDWR, 0600)), kAllow) << n;
  }
}

TEST(SeccompPrepare, DisabledSpecInstallsNothing) {
  auto prepared = seccomp::prepare(SeccompSpec{.enabled = false});
  ASSERT_TRUE(prepared) << prepared.error().to_string();
  EXPECT_FALSE(prepared->enabled);
  EXPECT_TRUE(prepared->syscalls.empty());
  EXPECT_TRUE(prepared->arguments.empty());
  EXPECT_EQ(seccomp::apply_in_child(*prepared), 0);
}

}  // namespace
}  // namespace brig::jail
