// The profile's data. Every line of the table is a decision: a syscall not
// allowed here says why on its line. See seccomp_profiles.h for why this is
// an allow-list.
#include "jail/seccomp_profiles.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

namespace brig::jail::seccomp_profiles {
namespace {

constexpr Verdict allow = Verdict::allow;
constexpr Verdict eperm = Verdict::eperm;
constexpr Verdict enosys = Verdict::enosys;

// x86_64's syscall table (arch/x86/entry/syscalls/syscall_64.tbl) up to
// Linux 6.18. Names are the kernel's; libseccomp 2.5.4 knows 0..456 except
// 335 and 336.
constexpr SyscallVerdict kTable[] = {
    {0, "read", allow},
    {1, "write", allow},
    {2, "open", allow},
    {3, "close", allow},
    {4, "stat", allow},
    {5, "fstat", allow},
    {6, "lstat", allow},
    {7, "poll", allow},
    {8, "lseek", allow},
    {9, "mmap", allow},
    {10, "mprotect", allow},
    {11, "munmap", allow},
    {12, "brk", allow},
    {13, "rt_sigaction", allow},
    {14, "rt_sigprocmask", allow},
    {15, "rt_sigreturn", allow},
    {16, "ioctl", allow},
    {17, "pread64", allow},
    {18, "pwrite64", allow},
    {19, "readv", allow},
    {20, "writev", allow},
    {21, "access", allow},
    {22, "pipe", allow},
    {23, "select", allow},
    {24, "sched_yield", allow},
    {25, "mremap", allow},
    {26, "msync", allow},
    {27, "mincore", allow},
    {28, "madvise", allow},
    {29, "shmget", allow},
    {30, "shmat", allow},
    {31, "shmctl", allow},
    {32, "dup", allow},
    {33, "dup2", allow},
    {34, "pause", allow},
    {35, "nanosleep", allow},
    {36, "getitimer", allow},
    {37, "alarm", allow},
    {38, "setitimer", allow},
    {39, "getpid", allow},
    {40, "sendfile", allow},
    {41, "socket", allow},
    {42, "connect", allow},
    {43, "accept", allow},
    {44, "sendto", allow},
    {45, "recvfrom", allow},
    {46, "sendmsg", allow},
    {47, "recvmsg", allow},
    {48, "shutdown", allow},
    {49, "bind", allow},
    {50, "listen", allow},
    {51, "getsockname", allow},
    {52, "getpeername", allow},
    {53, "socketpair", allow},
    {54, "setsockopt", allow},
    {55, "getsockopt", allow},
    {56, "clone", allow},
    {57, "fork", allow},
    {58, "vfork", allow},
    {59, "execve", allow},
    {60, "exit", allow},
    {61, "wait4", allow},
    {62, "kill", allow},
    {63, "uname", allow},
    {64, "semget", allow},
    {65, "semop", allow},
    {66, "semctl", allow},
    {67, "shmdt", allow},
    {68, "msgget", allow},
    {69, "msgsnd", allow},
    {70, "msgrcv", allow},
    {71, "msgctl", allow},
    {72, "fcntl", allow},
    {73, "flock", allow},
    {74, "fsync", allow},
    {75, "fdatasync", allow},
    {76, "truncate", allow},
    {77, "ftruncate", allow},
    {78, "getdents", allow},
    {79, "getcwd", allow},
    {80, "chdir", allow},
    {81, "fchdir", allow},
    {82, "rename", allow},
    {83, "mkdir", allow},
    {84, "rmdir", allow},
    {85, "creat", allow},
    {86, "link", allow},
    {87, "unlink", allow},
    {88, "symlink", allow},
    {89, "readlink", allow},
    {90, "chmod", allow},
    {91, "fchmod", allow},
    {92, "chown", allow},
    {93, "fchown", allow},
    {94, "lchown", allow},
    {95, "umask", allow},
    {96, "gettimeofday", allow},
    {97, "getrlimit", allow},
    {98, "getrusage", allow},
    {99, "sysinfo", allow},
    {100, "times", allow},
    {101, "ptrace", eperm},  // reads and writes other processes
    {102, "getuid", allow},
    {103, "syslog", eperm},  // the kernel log
    {104, "getgid", allow},
    {105, "setuid", allow},
    {106, "setgid", allow},
    {107, "geteuid", allow},
    {108, "getegid", allow},
    {109, "setpgid", allow},
    {110, "getppid", allow},
    {111, "getpgrp", allow},
    {112, "setsid", allow},
    {113, "setreuid", allow},
    {114, "setregid", allow},
    {115, "getgroups", allow},
    {116, "setgroups", allow},
    {117, "setresuid", allow},
    {118, "getresuid", allow},
    {119, "setresgid", allow},
    {120, "getresgid", allow},
    {121, "getpgid", allow},
    {122, "setfsuid", allow},
    {123, "setfsgid", allow},
    {124, "getsid", allow},
    {125, "capget", allow},
    {126, "capset", allow},
    {127, "rt_sigpending", allow},
    {128, "rt_sigtimedwait", allow},
    {129, "rt_sigqueueinfo", allow},
    {130, "rt_sigsuspend", allow},
    {131, "sigaltstack", allow},
    {132, "utime", allow},
    {133, "mknod", allow},
    {134, "uselib", enosys},  // obsolete
    {135, "personality", allow},
    {136, "ustat", allow},
    {137, "statfs", allow},
    {138, "fstatfs", allow},
    {139, "sysfs", allow},
    {140, "getpriority", allow},
    {141, "setpriority", allow},
    {142, "sched_setparam", allow},
    {143, "sched_getparam", allow},
    {144, "sched_setscheduler", allow},
    {145, "sched_getscheduler", allow},
    {146, "sched_get_priority_max", allow},
    {147, "sched_get_priority_min", allow},
    {148, "sched_rr_get_interval", allow},
    {149, "mlock", allow},
    {150, "munlock", allow},
    {151, "mlockall", allow},
    {152, "munlockall", allow},
    {153, "vhangup", eperm},     // hangs up the terminal
    {154, "modify_ldt", eperm},  // x86 LDT entries; only legacy 16-bit code needs them
    {155, "pivot_root", eperm},  // mount family
    {156, "_sysctl", enosys},    // removed from Linux
    {157, "prctl", allow},
    {158, "arch_prctl", allow},
    {159, "adjtimex", eperm},  // clock setter
    {160, "setrlimit", allow},
    {161, "chroot", eperm},  // mount family
    {162, "sync", allow},
    {163, "acct", eperm},              // process accounting
    {164, "settimeofday", eperm},      // clock setter
    {165, "mount", eperm},             // mount family
    {166, "umount2", eperm},           // mount family
    {167, "swapon", eperm},            // swap
    {168, "swapoff", eperm},           // swap
    {169, "reboot", eperm},            // reboot
    {170, "sethostname", eperm},       // host identity
    {171, "setdomainname", eperm},     // host identity
    {172, "iopl", eperm},              // I/O ports
    {173, "ioperm", eperm},            // I/O ports
    {174, "create_module", enosys},    // not implemented
    {175, "init_module", eperm},       // kernel modules
    {176, "delete_module", eperm},     // kernel modules
    {177, "get_kernel_syms", enosys},  // not implemented
    {178, "query_module", enosys},     // not implemented
    {179, "quotactl", eperm},          // quotas
    {180, "nfsservctl", enosys},       // not implemented
    {181, "getpmsg", enosys},          // not implemented
    {182, "putpmsg", enosys},          // not implemented
    {183, "afs_syscall", enosys},      // not implemented
    {184, "tuxcall", enosys},          // not implemented
    {185, "security", enosys},         // not implemented
    {186, "gettid", allow},
    {187, "readahead", allow},
    {188, "setxattr", allow},
    {189, "lsetxattr", allow},
    {190, "fsetxattr", allow},
    {191, "getxattr", allow},
    {192, "lgetxattr", allow},
    {193, "fgetxattr", allow},
    {194, "listxattr", allow},
    {195, "llistxattr", allow},
    {196, "flistxattr", allow},
    {197, "removexattr", allow},
    {198, "lremovexattr", allow},
    {199, "fremovexattr", allow},
    {200, "tkill", allow},
    {201, "time", allow},
    {202, "futex", allow},
    {203, "sched_setaffinity", allow},
    {204, "sched_getaffinity", allow},
    {205, "set_thread_area", allow},
    {206, "io_setup", allow},
    {207, "io_destroy", allow},
    {208, "io_getevents", allow},
    {209, "io_submit", allow},
    {210, "io_cancel", allow},
    {211, "get_thread_area", allow},
    {212, "lookup_dcookie", enosys},  // removed from Linux
    {213, "epoll_create", allow},
    {214, "epoll_ctl_old", enosys},   // not implemented
    {215, "epoll_wait_old", enosys},  // not implemented
    {216, "remap_file_pages", allow},
    {217, "getdents64", allow},
    {218, "set_tid_address", allow},
    {219, "restart_syscall", allow},
    {220, "semtimedop", allow},
    {221, "fadvise64", allow},
    {222, "timer_create", allow},
    {223, "timer_settime", allow},
    {224, "timer_gettime", allow},
    {225, "timer_getoverrun", allow},
    {226, "timer_delete", allow},
    {227, "clock_settime", eperm},  // clock setter
    {228, "clock_gettime", allow},
    {229, "clock_getres", allow},
    {230, "clock_nanosleep", allow},
    {231, "exit_group", allow},
    {232, "epoll_wait", allow},
    {233, "epoll_ctl", allow},
    {234, "tgkill", allow},
    {235, "utimes", allow},
    {236, "vserver", enosys},  // not implemented
    {237, "mbind", allow},
    {238, "set_mempolicy", allow},
    {239, "get_mempolicy", allow},
    {240, "mq_open", allow},
    {241, "mq_unlink", allow},
    {242, "mq_timedsend", allow},
    {243, "mq_timedreceive", allow},
    {244, "mq_notify", allow},
    {245, "mq_getsetattr", allow},
    {246, "kexec_load", eperm},  // kexec
    {247, "waitid", allow},
    {248, "add_key", eperm},      // keyrings are per host user, not per jail
    {249, "request_key", eperm},  // kernel keyrings
    {250, "keyctl", eperm},       // kernel keyrings
    {251, "ioprio_set", allow},
    {252, "ioprio_get", allow},
    {253, "inotify_init", allow},
    {254, "inotify_add_watch", allow},
    {255, "inotify_rm_watch", allow},
    {256, "migrate_pages", allow},
    {257, "openat", allow},
    {258, "mkdirat", allow},
    {259, "mknodat", allow},
    {260, "fchownat", allow},
    {261, "futimesat", allow},
    {262, "newfstatat", allow},
    {263, "unlinkat", allow},
    {264, "renameat", allow},
    {265, "linkat", allow},
    {266, "symlinkat", allow},
    {267, "readlinkat", allow},
    {268, "fchmodat", allow},
    {269, "faccessat", allow},
    {270, "pselect6", allow},
    {271, "ppoll", allow},
    {272, "unshare", eperm},  // namespaces
    {273, "set_robust_list", allow},
    {274, "get_robust_list", allow},
    {275, "splice", allow},
    {276, "tee", allow},
    {277, "sync_file_range", allow},
    {278, "vmsplice", allow},
    {279, "move_pages", allow},
    {280, "utimensat", allow},
    {281, "epoll_pwait", allow},
    {282, "signalfd", allow},
    {283, "timerfd_create", allow},
    {284, "eventfd", allow},
    {285, "fallocate", allow},
    {286, "timerfd_settime", allow},
    {287, "timerfd_gettime", allow},
    {288, "accept4", allow},
    {289, "signalfd4", allow},
    {290, "eventfd2", allow},
    {291, "epoll_create1", allow},
    {292, "dup3", allow},
    {293, "pipe2", allow},
    {294, "inotify_init1", allow},
    {295, "preadv", allow},
    {296, "pwritev", allow},
    {297, "rt_tgsigqueueinfo", allow},
    {298, "perf_event_open", eperm},  // kernel attack surface and side channels
    {299, "recvmmsg", allow},
    {300, "fanotify_init", allow},
    {301, "fanotify_mark", allow},
    {302, "prlimit64", allow},
    {303, "name_to_handle_at", allow},  // a handle opens nothing: open_by_handle_at is refused
    {304, "open_by_handle_at", eperm},  // opens any inode by handle, past the mount tree
    {305, "clock_adjtime", eperm},      // clock setter
    {306, "syncfs", allow},
    {307, "sendmmsg", allow},
    {308, "setns", eperm},  // namespaces
    {309, "getcpu", allow},
    {310, "process_vm_readv", eperm},   // reads other processes
    {311, "process_vm_writev", eperm},  // writes other processes
    {312, "kcmp", allow},
    {313, "finit_module", eperm},  // kernel modules
    {314, "sched_setattr", allow},
    {315, "sched_getattr", allow},
    {316, "renameat2", allow},
    {317, "seccomp", allow},
    {318, "getrandom", allow},
    {319, "memfd_create", allow},
    {320, "kexec_file_load", eperm},  // kexec
    {321, "bpf", eperm},              // eBPF: large kernel attack surface
    {322, "execveat", allow},
    {323, "userfaultfd", eperm},  // pauses kernel page faults at will: a kernel-exploit staple
    {324, "membarrier", allow},
    {325, "mlock2", allow},
    {326, "copy_file_range", allow},
    {327, "preadv2", allow},
    {328, "pwritev2", allow},
    {329, "pkey_mprotect", allow},
    {330, "pkey_alloc", allow},
    {331, "pkey_free", allow},
    {332, "statx", allow},
    {333, "io_pgetevents", allow},
    {334, "rseq", allow},
    {335, "uretprobe", allow},  // uprobe trampolines; the kernel checks the caller
    {336, "uprobe", allow},     // likewise
    {424, "pidfd_send_signal", allow},
    {425, "io_uring_setup", enosys},     // io_uring bypasses seccomp for the operations it runs
    {426, "io_uring_enter", enosys},     // io_uring
    {427, "io_uring_register", enosys},  // io_uring
    {428, "open_tree", eperm},           // mount family
    {429, "move_mount", eperm},          // mount family
    {430, "fsopen", eperm},              // mount family
    {431, "fsconfig", eperm},            // mount family
    {432, "fsmount", eperm},             // mount family
    {433, "fspick", eperm},              // mount family
    {434, "pidfd_open", allow},
    {435, "clone3",
     enosys},  // flags sit in a struct seccomp cannot read; glibc falls back to clone
    {436, "close_range", allow},
    {437, "openat2",
     enosys},  // its mode sits in a struct seccomp cannot read; glibc falls back to openat
    {438, "pidfd_getfd", eperm},  // takes another process's file descriptor
    {439, "faccessat2", allow},
    {440, "process_madvise", allow},
    {441, "epoll_pwait2", allow},
    {442, "mount_setattr", eperm},  // mount family
    {443, "quotactl_fd", eperm},    // quotas
    {444, "landlock_create_ruleset", allow},
    {445, "landlock_add_rule", allow},
    {446, "landlock_restrict_self", allow},
    {447, "memfd_secret", allow},
    {448, "process_mrelease", allow},
    {449, "futex_waitv", allow},
    {450, "set_mempolicy_home_node", allow},
    {451, "cachestat", allow},
    {452, "fchmodat2", allow},
    {453, "map_shadow_stack", allow},
    {454, "futex_wake", allow},
    {455, "futex_wait", allow},
    {456, "futex_requeue", allow},
    {457, "statmount", allow},  // read-only, the jail's own mount namespace
    {458, "listmount", allow},
    {459, "lsm_get_self_attr", allow},
    {460, "lsm_set_self_attr", eperm},  // changes the LSM context
    {461, "lsm_list_modules", allow},
    {462, "mseal", allow},
    {463, "setxattrat", allow},
    {464, "getxattrat", allow},
    {465, "listxattrat", allow},
    {466, "removexattrat", allow},
    {467, "open_tree_attr", eperm},  // mount family
    {468, "file_getattr", allow},
    {469, "file_setattr", allow},
};

// The families a jail may create sockets in; socket() and socketpair() with
// any other fail with EAFNOSUPPORT (argument_rules).
constexpr int kSocketFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

}  // namespace

std::span<const SyscallVerdict> syscall_table() {
  return kTable;
}

int syscall_number(std::string_view name) {
  for (const SyscallVerdict& s : kTable) {
    if (s.name == name) return s.number;
  }
  return -1;
}

namespace {

// The kernel's SOCK_TYPE_MASK: socket()'s type argument also carries
// SOCK_NONBLOCK and SOCK_CLOEXEC, which the kernel strips before reading the
// type from the low four bits.
constexpr uint32_t kSockTypeMask = 0xf;

// Aligned power-of-two blocks, as mask/value comparisons on `arg`, that
// together match every 32-bit value except those in `allowed` (sorted). This
// is how "anything but these" is said with masked-equality comparisons, the
// only kind libseccomp offers on the low 32 bits alone.
std::vector<ArgEquals> every_value_except(unsigned arg, std::span<const int> allowed) {
  std::vector<ArgEquals> blocks;
  auto cover = [&](uint64_t from, uint64_t to) {  // [from, to)
    while (from < to) {
      uint64_t size = from == 0 ? (uint64_t{1} << 32) : (from & -from);
      while (from + size > to) size >>= 1;
      blocks.push_back({arg, static_cast<uint32_t>(~(size - 1)), static_cast<uint32_t>(from)});
      from += size;
    }
  };
  uint64_t next = 0;
  for (int value : allowed) {
    cover(next, static_cast<uint32_t>(value));
    next = static_cast<uint64_t>(static_cast<uint32_t>(value)) + 1;
  }
  cover(next, uint64_t{1} << 32);
  return blocks;
}

ArgEquals has_bit(unsigned arg, uint32_t bit) {
  return {arg, bit, bit};
}
ArgEquals equals(unsigned arg, uint32_t value) {
  return {arg, 0xffffffff, value};
}

}  // namespace

std::vector<ArgumentRule> argument_rules() {
  static_assert(std::ranges::is_sorted(kSocketFamilies));
  std::vector<ArgumentRule> rules;
  auto refuse = [&rules](std::string_view syscall, int err, std::vector<ArgEquals> when) {
    rules.push_back({syscall, err, std::move(when)});
  };

  // No setuid or setgid files. The owner of a file (and uid 0, which the jail
  // keeps when brig runs as root) needs no capability to set these bits, and
  // such a file planted in a workspace would run with its owner's host ids
  // for whoever starts it outside the jail.
  for (uint32_t mode_bit : {uint32_t{S_ISUID}, uint32_t{S_ISGID}}) {
    refuse("chmod", EPERM, {has_bit(1, mode_bit)});
    refuse("fchmod", EPERM, {has_bit(1, mode_bit)});
    refuse("fchmodat", EPERM, {has_bit(2, mode_bit)});
    refuse("fchmodat2", EPERM, {has_bit(2, mode_bit)});
    refuse("creat", EPERM, {has_bit(1, mode_bit)});
    refuse("mknod", EPERM, {has_bit(1, mode_bit)});
    refuse("mknodat", EPERM, {has_bit(2, mode_bit)});
    // open's mode counts only when it creates a file: O_CREAT, or O_TMPFILE
    // (an unnamed file that linkat can name afterwards). O_TMPFILE is two
    // bits (__O_TMPFILE | O_DIRECTORY) and the kernel needs both.
    for (uint32_t creating : {uint32_t{O_CREAT}, uint32_t{O_TMPFILE}}) {
      refuse("open", EPERM, {has_bit(1, creating), has_bit(2, mode_bit)});
      refuse("openat", EPERM, {has_bit(2, creating), has_bit(3, mode_bit)});
    }
  }

  // No new namespaces from clone (unshare and setns are refused outright, and
  // clone3 is ENOSYS). CLONE_NEWTIME is absent: in clone's flags its bit is
  // part of the exit signal; only clone3 and unshare take it.
  for (uint32_t ns : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                      CLONE_NEWPID, CLONE_NEWNET}) {
    refuse("clone", EPERM, {has_bit(0, ns)});
  }

  // TIOCSTI pushes bytes into a terminal's input queue, and TIOCLINUX can
  // paste the console selection: either one types commands into the shell
  // that owns the terminal, outside the jail.
  refuse("ioctl", EPERM, {equals(1, TIOCSTI)});
  refuse("ioctl", EPERM, {equals(1, TIOCLINUX)});

  // Socket families: only the allowed ones; EAFNOSUPPORT is what a kernel
  // without the family answers, so programs fall back.
  for (const ArgEquals& block : every_value_except(0, kSocketFamilies)) {
    refuse("socket", EAFNOSUPPORT, {block});
    refuse("socketpair", EAFNOSUPPORT, {block});
  }
  // No raw IP sockets (forged packets, sniffing), and no SOCK_PACKET, which
  // the kernel still turns into an AF_PACKET socket for AF_INET. EPERM is what
  // the kernel answers without CAP_NET_RAW. Netlink sockets are SOCK_RAW by
  // nature and stay allowed.
  for (int family : {AF_INET, AF_INET6}) {
    for (uint32_t type : {uint32_t{SOCK_RAW}, uint32_t{SOCK_PACKET}}) {
      refuse("socket", EPERM,
             {equals(0, static_cast<uint32_t>(family)), ArgEquals{1, kSockTypeMask, type}});
    }
  }
  return rules;
}

}  // namespace brig::jail::seccomp_profiles
