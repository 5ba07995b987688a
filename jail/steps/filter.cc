#include "jail/steps/filter.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "jail/base/unique_fd.h"
#include "jail/netfilter/nft_table.h"
#include "jail/netfilter/ruleset.h"
#include "jail/netfilter/veth.h"
#include "jail/step_error.h"
#include "jail/steps/clone.h"

namespace brig::jail::filter {
namespace {

// brig-netfilter's work is one nftables transaction: a program that takes
// longer than this is stuck, and would hold up the jail (and a spawner
// every exec).
constexpr int kTimeoutMs = 10'000;

constexpr const char* kNeedsPrivilege =
    " (network mode filtered needs root or CAP_NET_ADMIN; use mode proxy without them)";

Error failed(const std::string& what, const std::string& why) {
  return step_error(SetupStep::netfilter, what, why);
}

Error failed(Error e) {
  if (e.sys_errno == EPERM) e.why += kNeedsPrivilege;
  return at_step(SetupStep::netfilter, std::move(e));
}

Result<void> check_forwarding() {
  UniqueFd fd(::open("/proc/sys/net/ipv4/ip_forward", O_RDONLY | O_CLOEXEC));
  char c = '0';
  if (!fd || ::read(fd.get(), &c, 1) != 1)
    return std::unexpected(
        step_sys_error(SetupStep::netfilter, "read /proc/sys/net/ipv4/ip_forward", errno));
  if (c != '1')
    return std::unexpected(
        failed("route a filtered jail",
               "net.ipv4.ip_forward is 0 here, so the host forwards nothing for the jail; enable "
               "it (sysctl -w net.ipv4.ip_forward=1) or use network mode proxy"));
  return {};
}

// The child, between clone3 and execve: async-signal-safe calls only.
[[noreturn]] void exec_program(const char* program, int errors) {
  const int null = ::open("/dev/null", O_RDONLY);
  if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(errors, 1) < 0 || ::dup2(errors, 2) < 0)
    ::_exit(126);
  ::syscall(SYS_close_range, 3U, ~0U, 0U);
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

// Runs brig-netfilter to completion (killed after kTimeoutMs).
Result<void> load_host_table(const std::string& program) {
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0)
    return std::unexpected(step_sys_error(SetupStep::netfilter, "pipe2 for brig-netfilter", errno));
  UniqueFd err_read(err[0]), err_write(err[1]);
  int raw_pidfd = -1;
  const pid_t pid = clone::clone3_with_pidfd(0, &raw_pidfd);
  if (pid < 0)
    return std::unexpected(step_sys_error(SetupStep::netfilter, "clone3 brig-netfilter", errno));
  if (pid == 0) exec_program(program.c_str(), err_write.get());
  const UniqueFd pidfd(raw_pidfd);
  err_write.reset();
  pollfd exited{pidfd.get(), POLLIN, 0};
  int ready;
  while ((ready = ::poll(&exited, 1, kTimeoutMs)) < 0 && errno == EINTR) {
  }
  if (ready == 0) ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd.get()), &info, WEXITED) !=
         0) {
    if (errno != EINTR)
      return std::unexpected(
          step_sys_error(SetupStep::netfilter, "wait for brig-netfilter", errno));
  }
  const std::string what = "load the host's nftables table inet brig_filtered";
  if (ready == 0)
    return std::unexpected(failed(what, "brig-netfilter did not finish in " +
                                            std::to_string(kTimeoutMs / 1000) +
                                            " s; it was killed"));
  const std::string said = read_some(err_read.get());
  if (info.si_code == CLD_EXITED && info.si_status == 0) return {};
  if (!said.empty()) return std::unexpected(failed(what, said));
  std::string why = info.si_code == CLD_EXITED
                        ? program + " exited with status " + std::to_string(info.si_status)
                        : program + " was killed by signal " + std::to_string(info.si_status);
  if (info.si_code == CLD_EXITED && info.si_status == 127) why += " (cannot execute it)";
  return std::unexpected(failed(what, why));
}

}  // namespace

Result<void> ensure_host(const NetFilter& filter) {
  BRIG_TRY_VOID(check_forwarding());
  auto rules = netfilter::inet_table_rules("brig_filtered");
  if (!rules) return std::unexpected(failed(std::move(rules.error())));
  if (*rules == netfilter::host_rule_count()) return {};
  return load_host_table(filter.program);
}

Result<void> give_veth(int netns, int route_sock) {
  std::uint32_t start = 0;
  if (::getrandom(&start, sizeof start, 0) != sizeof start)
    start = static_cast<std::uint32_t>(::getpid());
  auto index = netfilter::create_veth(netns, start % netfilter::kMaxVeths);
  if (!index) return std::unexpected(failed(std::move(index.error())));
  const std::string host_end = netfilter::veth_name(*index);
  const unsigned host_ifindex = ::if_nametoindex(host_end.c_str());
  if (host_ifindex == 0)
    return std::unexpected(
        step_sys_error(SetupStep::netfilter, "find the interface " + host_end, errno));
  auto host_sock = netfilter::open_rtnetlink();
  if (!host_sock) return std::unexpected(failed(std::move(host_sock.error())));
  Result<void> ok = netfilter::address_and_up(host_sock->get(), host_ifindex, host_end,
                                              netfilter::host_address(*index), 30);
  if (ok)
    ok = netfilter::address_and_up(route_sock, netfilter::kJailIfindex, "the jail's eth0",
                                   netfilter::jail_address(*index), 30);
  if (ok) ok = netfilter::default_route(route_sock, netfilter::host_address(*index));
  if (!ok) return std::unexpected(failed(std::move(ok.error())));
  return {};
}

}  // namespace brig::jail::filter
