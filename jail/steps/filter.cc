#include "jail/steps/filter.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "jail/base/fd_message.h"
#include "jail/netfilter/ruleset.h"
#include "jail/step_error.h"
#include "jail/steps/clone.h"

namespace brig::jail::filter {
namespace {

constexpr int kTimeoutMs = 10'000;

Error failed(const std::string& why) {
  return step_error(SetupStep::netfilter, "give the filtered jail its network", why);
}

Error sys_failed(const char* what, int err) {
  return step_sys_error(SetupStep::netfilter, what, err);
}

// The child, between clone3 and execve: async-signal-safe calls only.
[[noreturn]] void exec_program(const char* program, int rules, int errors, int sock) {
  if (::dup2(rules, 0) < 0 || ::dup2(errors, 1) < 0 || ::dup2(errors, 2) < 0 ||
      (sock == 3 ? ::fcntl(3, F_SETFD, 0) : ::dup2(sock, 3)) < 0)
    ::_exit(126);
  ::syscall(SYS_close_range, 4U, ~0U, 0U);
  char* const argv[] = {const_cast<char*>(program), nullptr};
  char* const envp[] = {nullptr};
  ::execve(program, argv, envp);
  ::_exit(127);
}

// Everything in `fd` until EOF (or 4 KiB of it: one line is expected).
std::string read_some(int fd) {
  std::string out;
  char buf[4096];
  while (out.size() < sizeof buf) {
    const ssize_t n = ::read(fd, buf, sizeof buf - out.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

Result<Running> start(const NetFilter& filter) {
  const std::string rules = netfilter::jail_ruleset(filter);
  int in[2], err[2], sock[2];
  if (::pipe2(in, O_CLOEXEC) != 0)
    return std::unexpected(sys_failed("pipe2 for brig-netfilter", errno));
  UniqueFd in_read(in[0]), in_write(in[1]);
  if (::pipe2(err, O_CLOEXEC) != 0)
    return std::unexpected(sys_failed("pipe2 for brig-netfilter", errno));
  UniqueFd err_read(err[0]), err_write(err[1]);
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) != 0)
    return std::unexpected(sys_failed("socketpair for brig-netfilter", errno));
  UniqueFd ours(sock[0]), its(sock[1]);
  int pidfd = -1;
  const pid_t pid = clone::clone3_with_pidfd(0, &pidfd);
  if (pid < 0) return std::unexpected(sys_failed("clone3 brig-netfilter", errno));
  if (pid == 0) exec_program(filter.program.c_str(), in_read.get(), err_write.get(), its.get());
  Running running(UniqueFd(pidfd), std::move(ours), std::move(err_read));
  in_read.reset();
  err_write.reset();
  its.reset();
  // The program reads all of its stdin before anything else, so this
  // finishes however large the rules; EPIPE means it died, which finish()
  // reports.
  const sighandler_t old = ::signal(SIGPIPE, SIG_IGN);
  std::size_t done = 0;
  while (done < rules.size()) {
    const ssize_t n = ::write(in_write.get(), rules.data() + done, rules.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::signal(SIGPIPE, old);
  return running;
}

Running::~Running() {
  if (!pidfd_) return;  // finished, or moved from
  ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                  WEXITED) != 0 &&
         errno == EINTR) {
  }
}

Result<void> Running::give_netns(int netns) {
  const char go = 1;
  const int e = send_with_fds(netns_sock_.get(), &go, 1, &netns, 1);
  netns_sock_.reset();
  // EPIPE: it has failed already; finish() says why.
  if (e != 0 && e != EPIPE)
    return std::unexpected(sys_failed("hand brig-netfilter the jail's namespace", e));
  return {};
}

Result<void> Running::finish() {
  netns_sock_.reset();  // never given one: it stops waiting
  // Its work is a few netlink messages: a program that takes longer than
  // this is stuck, and would hold up the jail (and a spawner every exec).
  pollfd exited{pidfd_.get(), POLLIN, 0};
  int ready;
  while ((ready = ::poll(&exited, 1, kTimeoutMs)) < 0 && errno == EINTR) {
  }
  if (ready == 0)
    return std::unexpected(failed("brig-netfilter did not finish in " +
                                  std::to_string(kTimeoutMs / 1000) + " s; it was killed"));
  const std::string said = read_some(errors_.get());
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                  WEXITED) != 0) {
    if (errno != EINTR) return std::unexpected(sys_failed("wait for brig-netfilter", errno));
  }
  pidfd_.reset();
  if (info.si_code == CLD_EXITED && info.si_status == 0) return {};
  std::string why = said;
  if (why.empty()) {
    why = info.si_code == CLD_EXITED
              ? "brig-netfilter exited with status " + std::to_string(info.si_status)
              : "brig-netfilter was killed by signal " + std::to_string(info.si_status);
    if (info.si_code == CLD_EXITED && info.si_status == 127) why += " (cannot execute it)";
  }
  return std::unexpected(failed(why));
}

}  // namespace brig::jail::filter
