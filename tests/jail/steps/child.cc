#include "tests/jail/steps/child.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace brig::jail::testing {
namespace {

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string write_file(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return std::string("open ") + path + ": " + std::strerror(errno);
  bool ok = write_all(fd, text);
  int err = errno;
  close(fd);
  return ok ? "" : std::string("write ") + path + ": " + std::strerror(err);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

}  // namespace

std::string describe(Outcome outcome) {
  if (outcome == kSucceeds) return "succeeds";
  if (outcome == kAnyOutcome) return "anything";
  if (outcome < 0) return "killed by signal " + std::to_string(-outcome);
  return std::string(strerrorname_np(outcome) ? strerrorname_np(outcome) : "errno") + " (" +
         std::strerror(outcome) + ")";
}

Outcome attempt(const std::function<long()>& call) {
  pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    alarm(60);
    errno = 0;
    long rc = call();
    int err = errno;
    _exit(rc >= 0 ? 0 : (err > 0 && err < 256 ? err : 255));
  }
  int status = wait_for(pid);
  if (status < 0) return errno;
  if (WIFSIGNALED(status)) return killed_by(WTERMSIG(status));
  return WEXITSTATUS(status);
}

std::string run_in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::string("pipe2: ") + std::strerror(errno);
  pid_t pid = fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    close(fds[0]);
    // Probes that are killed by seccomp must not leave core files behind.
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    alarm(120);
    std::string report = body();
    _exit(write_all(fds[1], report) ? 0 : 1);
  }
  close(fds[1]);
  std::string report;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    report.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = wait_for(pid);
  if (status < 0) return std::string("waitpid: ") + std::strerror(errno);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "test child " + describe_status(status) + (report.empty() ? "" : ": " + report);
  return report;
}

std::string run_probes(std::span<const Probe> probes, const std::function<std::string()>& setup,
                       const std::function<int()>& apply_layer) {
  return run_in_child([&]() -> std::string {
    if (std::string err = setup(); !err.empty()) return "setup: " + err;
    if (apply_layer) {
      if (int err = apply_layer()) return std::string("applying the layer: ") + std::strerror(err);
    }
    std::string mismatches;
    for (const Probe& probe : probes) {
      Outcome want = apply_layer ? probe.with_layer : probe.without_layer;
      Outcome got = attempt(probe.call);
      if (want != kAnyOutcome && got != want) {
        mismatches += probe.name + (apply_layer ? " (with the layer)" : " (control)") + ": got " +
                      describe(got) + ", want " + describe(want) + "\n";
      }
    }
    return mismatches;
  });
}

std::string become_root_in_new_user_namespace(int extra_flags) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | extra_flags) != 0)
    return std::string("unshare(CLONE_NEWUSER): ") + std::strerror(errno);
  if (std::string err = write_file("/proc/self/setgroups", "deny"); !err.empty()) return err;
  if (std::string err = write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1");
      !err.empty())
    return err;
  return write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
}

long from_error_number(int err) {
  if (err == 0) return 0;
  errno = err;
  return -1;
}

long spawn_true() {
  pid_t pid;
  char arg0[] = "true";
  char* argv[] = {arg0, nullptr};
  char* envp[] = {nullptr};
  if (int err = posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, envp))
    return from_error_number(err);
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : from_error_number(ECHILD);
}

}  // namespace brig::jail::testing
