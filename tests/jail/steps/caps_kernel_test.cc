// The capability drop in a real kernel. Inside a fresh user namespace a
// process holds every capability of that namespace, so there is something to
// drop even when the test runs unprivileged; the control shows it is there.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "jail/steps/caps.h"
#include "tests/jail/steps/child.h"

namespace brig::jail {
namespace {

constexpr const char* kCapabilityLines[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
constexpr const char* kZero = "0000000000000000";

// "Name:\tvalue" lines of a /proc/<pid>/status text.
std::map<std::string, std::string> status_fields(const std::string& text) {
  std::map<std::string, std::string> fields;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (size_t colon = line.find(":\t"); colon != std::string::npos)
      fields[line.substr(0, colon)] = line.substr(colon + 2);
    start = end + 1;
  }
  return fields;
}

std::string read_fd(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

std::string own_status() {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text = read_fd(fd);
  close(fd);
  return text;
}

// What /proc/self/status says in a program started by execve from here:
// capabilities are recomputed on execve, so this shows what exec grants.
std::string status_after_execve() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return "";
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    execl("/bin/cat", "cat", "/proc/self/status", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string text = read_fd(fds[0]);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return text;
}

// Lines of `status` whose capability set is not empty; "" = all empty.
// `skip_bounding` leaves CapBnd out.
std::string nonzero_capabilities(const std::string& status, bool skip_bounding = false) {
  auto fields = status_fields(status);
  std::string found;
  for (const char* name : kCapabilityLines) {
    if (skip_bounding && std::strcmp(name, "CapBnd") == 0) continue;
    if (fields[name] != kZero) found += std::string(name) + "=" + fields[name] + " ";
  }
  return found;
}

bool has_effective_setpcap() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[0].effective & (1U << CAP_SETPCAP)) != 0;
}

TEST(CapsKernel, ControlAUserNamespaceHoldsCapabilities) {
  std::string report = testing::run_in_child([]() -> std::string {
    if (std::string err = testing::become_root_in_new_user_namespace(0); !err.empty()) return err;
    std::string status = own_status();
    if (status_fields(status)["CapEff"] == kZero) return "no capabilities to drop";
    // uid 0 of the namespace gets them again from execve.
    if (status_fields(status_after_execve())["CapEff"] == kZero) return "execve granted none";
    return "";
  });
  EXPECT_EQ(report, "");
}

TEST(CapsKernel, DropsEverySetInsideAUserNamespace) {
  auto prepared = caps::prepare(Namespaces{});
  ASSERT_TRUE(prepared) << prepared.error().to_string();
  EXPECT_TRUE(prepared->can_setpcap);
  EXPECT_TRUE(prepared->unenforced.empty());
  EXPECT_GE(prepared->last_cap, 40);  // CAP_CHECKPOINT_RESTORE, Linux 5.9

  std::string report = testing::run_in_child([&]() -> std::string {
    if (std::string err = testing::become_root_in_new_user_namespace(0); !err.empty()) return err;
    if (int err = caps::apply_in_child(*prepared))
      return std::string("apply: ") + std::strerror(err);
    std::string problems;
    if (std::string left = nonzero_capabilities(own_status()); !left.empty())
      problems += "after the drop: " + left + "\n";
    if (std::string left = nonzero_capabilities(status_after_execve()); !left.empty())
      problems += "after execve as uid 0: " + left + "\n";
    int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    int want = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
               SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED | SECBIT_KEEP_CAPS_LOCKED;
    if (bits != want) problems += "securebits " + std::to_string(bits) + "\n";
    // With the drop done, nothing can be raised back.
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_ADMIN, 0, 0) == 0)
      problems += "raised an ambient capability\n";
    return problems;
  });
  EXPECT_EQ(report, "");
}

TEST(CapsKernel, NoNewPrivsIsSet) {
  std::string report = testing::run_in_child([]() -> std::string {
    if (status_fields(own_status())["NoNewPrivs"] != "0") return "already set before";
    if (int err = caps::set_no_new_privs_in_child()) return std::strerror(err);
    return status_fields(own_status())["NoNewPrivs"] == "1" ? "" : "not set";
  });
  EXPECT_EQ(report, "");
}

// Without a new user namespace (the Landlock + seccomp tier) the child has the
// caller's capabilities: all of them as root, none as an unprivileged user,
// who cannot touch the bounding set.
TEST(CapsKernel, WithoutAUserNamespaceDropsWhatTheCallerHas) {
  Namespaces no_user;
  no_user.user = false;
  auto prepared = caps::prepare(no_user);
  ASSERT_TRUE(prepared) << prepared.error().to_string();
  EXPECT_EQ(prepared->can_setpcap, has_effective_setpcap());
  EXPECT_EQ(prepared->unenforced.empty(), prepared->can_setpcap);

  std::string report = testing::run_in_child([&]() -> std::string {
    if (int err = caps::apply_in_child(*prepared))
      return std::string("apply: ") + std::strerror(err);
    return nonzero_capabilities(own_status(), /*skip_bounding=*/!prepared->can_setpcap);
  });
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace brig::jail
