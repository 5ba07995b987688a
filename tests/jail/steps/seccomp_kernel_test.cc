// The compiled seccomp filter in a real kernel: each probe runs in a forked
// child that is root in its own user, mount and network namespaces, so
// without the filter (the control) every refused call would succeed, and a
// refusal with the filter is the filter's doing.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/io_uring.h>
#include <linux/mount.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "jail/steps/caps.h"
#include "jail/steps/seccomp.h"
#include "tests/jail/steps/child.h"

namespace brig::jail {
namespace {

using testing::kAnyOutcome;
using testing::killed_by;
using testing::kSucceeds;
using testing::Probe;
using testing::spawn_true;

constexpr uint64_t kHigh = uint64_t{1} << 32;
constexpr int kKeySpecSessionKeyring = -3;  // KEY_SPEC_SESSION_KEYRING
constexpr int kKeyctlGetKeyringId = 0;      // KEYCTL_GET_KEYRING_ID

// Waits for a child made by a raw clone/clone3 in a probe; passes the
// syscall's result through.
long reap(long pid) {
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return pid;
}

long start_thread() {
  pthread_t thread;
  auto body = [](void*) -> void* { return nullptr; };
  if (int err = pthread_create(&thread, nullptr, body, nullptr))
    return testing::from_error_number(err);
  return testing::from_error_number(pthread_join(thread, nullptr));
}

long ptrace_attach_to_a_child() {
  pid_t target = fork();
  if (target == 0) {
    for (;;) pause();
  }
  long rc = ptrace(PTRACE_ATTACH, target, nullptr, nullptr);
  int err = errno;
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
  errno = err;
  return rc;
}

long i386_getpid() {
  long rc;
  // The 32-bit entry point, with i386's getpid number.
  asm volatile("int $0x80" : "=a"(rc) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
  return rc;
}

class SeccompKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/brig-seccomp-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr) << std::strerror(errno);
    root_ = dir;
    auto prepared = seccomp::prepare(SeccompSpec{});
    ASSERT_TRUE(prepared) << prepared.error().to_string();
    prepared_ = std::move(*prepared);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }

  // Run in each test child: namespaces where the child is root, its own
  // directory (controls create files the filtered run would collide with),
  // and a pty as its controlling terminal (TIOCSTI needs one).
  std::string setup() {
    if (setsid() < 0) return std::string("setsid: ") + std::strerror(errno);
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0)
      return std::string("pty: ") + std::strerror(errno);
    tty_ = open(ptsname(master), O_RDWR | O_CLOEXEC);  // becomes the controlling tty
    if (tty_ < 0) return std::string("open pty: ") + std::strerror(errno);
    std::string err = testing::become_root_in_new_user_namespace(CLONE_NEWNS | CLONE_NEWNET);
    if (!err.empty()) return err;
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return std::string("make / private: ") + std::strerror(errno);
    char dir[4096];
    std::snprintf(dir, sizeof dir, "%s/run-XXXXXX", root_.c_str());
    if (mkdtemp(dir) == nullptr) return std::string("mkdtemp: ") + std::strerror(errno);
    dir_ = dir;
    for (const char* name : {"/file", "/mnt"}) {
      std::string path = dir_ + name;
      int rc = name[1] == 'f' ? creat(path.c_str(), 0644) : mkdir(path.c_str(), 0755);
      if (rc < 0) return path + ": " + std::strerror(errno);
      if (name[1] == 'f') close(rc);
    }
    return "";
  }

  std::string path(const char* name) const { return dir_ + "/" + name; }

  std::vector<Probe> probes() {
    auto p = [this](const char* name) { return path(name); };
    return {
        // Mount family: the control mounts a tmpfs in its own mount namespace.
        {"mount tmpfs", [=] { return long{mount("none", p("mnt").c_str(), "tmpfs", 0, nullptr)}; },
         EPERM, kSucceeds},
        {"umount2", [=] { return long{umount2(p("file").c_str(), 0)}; }, EPERM, EINVAL},
        {"fsopen", [] { return syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC); }, EPERM, kSucceeds},
        {"open_tree clone",
         [=] {
           return syscall(SYS_open_tree, AT_FDCWD, p("mnt").c_str(),
                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
         },
         EPERM, kSucceeds},
        {"chroot", [=] { return long{chroot(p("mnt").c_str())}; }, EPERM, kSucceeds},
        // Namespaces.
        {"unshare user", [] { return long{unshare(CLONE_NEWUSER)}; }, EPERM, kSucceeds},
        {"setns own netns",
         [] {
           int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
           return fd < 0 ? -1L : long{setns(fd, CLONE_NEWNET)};
         },
         EPERM, kSucceeds},
        {"clone new user ns",
         [] { return reap(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)); }, EPERM,
         kSucceeds},
        {"clone new net ns with high flag bits",
         [] { return reap(syscall(SYS_clone, kHigh | CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0)); }, EPERM,
         kSucceeds},
        {"clone3",
         [] {
           clone_args args{};
           args.exit_signal = SIGCHLD;
           return reap(syscall(SYS_clone3, &args, sizeof args));
         },
         ENOSYS, kSucceeds},
        // Other processes and kernel facilities.
        {"ptrace attach", ptrace_attach_to_a_child, EPERM, kSucceeds},
        {"process_vm_readv self",
         [] {
           char from[8] = "secret", to[8];
           iovec local{to, sizeof to}, remote{from, sizeof from};
           return long{process_vm_readv(getpid(), &local, 1, &remote, 1, 0)};
         },
         EPERM, kSucceeds},
        {"perf_event_open own task clock",
         [] {
           perf_event_attr attr{};
           attr.size = sizeof attr;
           attr.type = PERF_TYPE_SOFTWARE;
           attr.config = PERF_COUNT_SW_TASK_CLOCK;
           attr.exclude_kernel = 1;
           attr.exclude_hv = 1;
           return syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
         },
         EPERM, kSucceeds},
        {"userfaultfd user mode",
         [] { return syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY); }, EPERM,
         kSucceeds},
        {"keyctl session keyring",
         [] { return syscall(SYS_keyctl, kKeyctlGetKeyringId, kKeySpecSessionKeyring, 1); }, EPERM,
         kSucceeds},
        {"adjtimex read-only",
         [] {
           timex t{};
           return long{adjtimex(&t)};
         },
         EPERM, kSucceeds},
        {"io_uring_setup",
         [] {
           io_uring_params params{};
           return syscall(SYS_io_uring_setup, 1, &params);
         },
         ENOSYS, kSucceeds},
        {"openat2",
         [=] {
           open_how how{};
           how.flags = O_RDONLY | O_CLOEXEC;
           return syscall(SYS_openat2, AT_FDCWD, p("file").c_str(), &how, sizeof how);
         },
         ENOSYS, kSucceeds},
        // Setuid and setgid files.
        {"chmod 04755", [=] { return long{chmod(p("file").c_str(), 04755)}; }, EPERM, kSucceeds},
        {"chmod 02755", [=] { return long{chmod(p("file").c_str(), 02755)}; }, EPERM, kSucceeds},
        {"chmod 04755 with high bits",
         [=] { return syscall(SYS_chmod, p("file").c_str(), kHigh | 04755); }, EPERM, kSucceeds},
        {"fchmod 04755",
         [=] {
           int fd = open(p("file").c_str(), O_RDONLY | O_CLOEXEC);
           return fd < 0 ? -1L : long{fchmod(fd, 04755)};
         },
         EPERM, kSucceeds},
        {"fchmodat 04755", [=] { return long{fchmodat(AT_FDCWD, p("file").c_str(), 04755, 0)}; },
         EPERM, kSucceeds},
        {"fchmodat2 04755", [=] { return syscall(452, AT_FDCWD, p("file").c_str(), 04755, 0); },
         EPERM, kSucceeds},
        {"open O_CREAT 06755",
         [=] { return long{open(p("suid1").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 06755)}; },
         EPERM, kSucceeds},
        {"openat O_CREAT 04755",
         [=] {
           return long{openat(AT_FDCWD, p("suid2").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 04755)};
         },
         EPERM, kSucceeds},
        {"creat 04755", [=] { return long{creat(p("suid3").c_str(), 04755)}; }, EPERM, kSucceeds},
        {"open O_TMPFILE 04755",
         [=] { return long{open(p("").c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 04755)}; }, EPERM,
         kSucceeds},
        {"mknod fifo 04644", [=] { return long{mknod(p("fifo1").c_str(), S_IFIFO | 04644, 0)}; },
         EPERM, kSucceeds},
        {"mknodat fifo 02644",
         [=] { return long{mknodat(AT_FDCWD, p("fifo2").c_str(), S_IFIFO | 02644, 0)}; }, EPERM,
         kSucceeds},
        {"chmod 0755", [=] { return long{chmod(p("file").c_str(), 0755)}; }, kSucceeds, kSucceeds},
        {"open O_CREAT 0644",
         [=] { return long{open(p("plain").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644)}; },
         kSucceeds, kSucceeds},
        {"open without O_CREAT ignores a setuid mode",
         [=] { return long{open(p("file").c_str(), O_RDONLY | O_CLOEXEC, 04755)}; }, kSucceeds,
         kSucceeds},
        {"mknod fifo 0644", [=] { return long{mknod(p("fifo3").c_str(), S_IFIFO | 0644, 0)}; },
         kSucceeds, kSucceeds},
        // The terminal.
        {"TIOCSTI with high bits",
         [this] {
           char c = '\n';
           return syscall(SYS_ioctl, tty_, kHigh | TIOCSTI, &c);
         },
         EPERM, kSucceeds},
        {"TIOCLINUX",
         [this] {
           char subcode = 0;
           return long{ioctl(tty_, TIOCLINUX, &subcode)};
         },
         EPERM, ENOTTY},  // a pty is not a virtual console
        {"TIOCGWINSZ",
         [this] {
           winsize ws;
           return long{ioctl(tty_, TIOCGWINSZ, &ws)};
         },
         kSucceeds, kSucceeds},
        // Sockets.
        {"socket AF_PACKET", [] { return long{socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)}; },
         EAFNOSUPPORT, kSucceeds},
        {"socket AF_PACKET with high bits",
         [] { return syscall(SYS_socket, kHigh | AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); },
         EAFNOSUPPORT, kSucceeds},
        {"socket AF_INET SOCK_RAW",
         [] { return long{socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP)}; }, EPERM,
         kSucceeds},
        {"socket AF_INET6 SOCK_RAW",
         [] { return long{socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6)}; }, EPERM,
         kSucceeds},
        {"socket AF_INET SOCK_PACKET",
         [] { return long{socket(AF_INET, SOCK_PACKET | SOCK_CLOEXEC, htons(ETH_P_ALL))}; }, EPERM,
         kSucceeds},
        {"socket AF_INET stream",
         [] { return long{socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)}; }, kSucceeds, kSucceeds},
        {"socket AF_INET with high bits",
         [] { return syscall(SYS_socket, kHigh | AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); },
         kSucceeds, kSucceeds},
        {"socket AF_INET6 dgram",
         [] { return long{socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0)}; }, kSucceeds, kSucceeds},
        {"socket AF_UNIX", [] { return long{socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)}; },
         kSucceeds, kSucceeds},
        {"socket AF_NETLINK",
         [] { return long{socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)}; }, kSucceeds,
         kSucceeds},
        // Architectures and unknown numbers.
        {"x32 getpid", [] { return syscall(0x40000000 | SYS_getpid); }, killed_by(SIGSYS),
         kAnyOutcome},
        {"i386 getpid", i386_getpid, killed_by(SIGSYS), kSucceeds},
        {"syscall 470", [] { return syscall(470, 0, 0, 0, 0, 0); }, ENOSYS, kAnyOutcome},
        // Ordinary work goes on.
        {"fork",
         [] {
           pid_t pid = fork();
           if (pid == 0) _exit(0);
           return reap(pid);
         },
         kSucceeds, kSucceeds},
        {"clone SIGCHLD", [] { return reap(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)); }, kSucceeds,
         kSucceeds},
        {"pthread_create", start_thread, kSucceeds, kSucceeds},
        {"posix_spawn /bin/true", spawn_true, kSucceeds, kSucceeds},
        {"read a file",
         [=] {
           int fd = open(p("file").c_str(), O_RDONLY | O_CLOEXEC);
           char c;
           return fd < 0 ? -1L : long{read(fd, &c, 1)};
         },
         kSucceeds, kSucceeds},
    };
  }

  std::string root_;
  std::string dir_;  // filled in by setup(), in the test child
  int tty_ = -1;     // likewise
  seccomp::Prepared prepared_;
};

TEST_F(SeccompKernel, ControlWithoutTheFilterEveryAttemptWorks) {
  auto all = probes();
  EXPECT_EQ(testing::run_probes(
                all, [this] { return setup(); }, nullptr),
            "");
}

TEST_F(SeccompKernel, WithTheFilterRefusalsHaveTheProfileErrno) {
  auto all = probes();
  auto apply = [this] {
    if (int err = caps::set_no_new_privs_in_child()) return err;
    return seccomp::apply_in_child(prepared_);
  };
  EXPECT_EQ(testing::run_probes(
                all, [this] { return setup(); }, apply),
            "");
}

TEST_F(SeccompKernel, StatusShowsFilterMode) {
  std::string report = testing::run_in_child([this]() -> std::string {
    if (int err = caps::set_no_new_privs_in_child()) return std::strerror(err);
    if (int err = seccomp::apply_in_child(prepared_)) return std::strerror(err);
    FILE* f = std::fopen("/proc/self/status", "re");
    if (f == nullptr) return "open /proc/self/status";
    char line[256];
    std::string found;
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "Seccomp:", 8) == 0 || std::strncmp(line, "NoNewPrivs:", 11) == 0 ||
          std::strncmp(line, "Seccomp_filters:", 16) == 0)
        found += line;
    }
    std::fclose(f);
    return found == "NoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t2\n" ? "" : found;
  });
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace brig::jail
