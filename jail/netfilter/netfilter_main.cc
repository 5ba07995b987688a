// brig-netfilter: gives a `filtered` jail its network (ruleset.h, veth.h).
// Run by the launcher, as brig's own user, once the jail's network
// namespace exists and before its command starts:
//   fd 0: the jail's nftables rules (ruleset.h, jail_ruleset), then EOF
//   fd 3: a socket that brings one byte and the jail's network namespace
//         (SCM_RIGHTS) once it exists: started before it, the program
//         loads its libraries and checks the host's table meanwhile
// Exit 0 when the jail's veth is up and its rules are loaded; else 1 and
// one line on stderr saying what failed. A separate program because
// libnftables is a shared library and brig's launchers are static; and it
// runs in a child, so its namespace changes never touch brig's own.
#include <errno.h>
#include <fcntl.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "jail/base/error.h"
#include "jail/base/fd_message.h"
#include "jail/base/unique_fd.h"
#include "jail/netfilter/nft_table.h"
#include "jail/netfilter/ruleset.h"
#include "jail/netfilter/veth.h"

namespace brig::jail::netfilter {
namespace {

constexpr int kNetnsSock = 3;

Result<std::string> read_all(int fd) {
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return out;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::unexpected(sys_error("read the jail's rules", "stdin", errno));
    out.append(buf, static_cast<std::size_t>(n));
  }
}

// Forwarding is the host's choice, never brig's to make behind its back.
Result<void> check_forwarding() {
  UniqueFd fd(::open("/proc/sys/net/ipv4/ip_forward", O_RDONLY | O_CLOEXEC));
  char c = '0';
  if (!fd || ::read(fd.get(), &c, 1) != 1)
    return std::unexpected(sys_error("read", "/proc/sys/net/ipv4/ip_forward", errno));
  if (c != '1')
    return std::unexpected(
        Error{"route a filtered jail", "net.ipv4.ip_forward",
              "is 0 here, so the host forwards nothing for the jail; enable it (sysctl -w "
              "net.ipv4.ip_forward=1) or use network mode proxy"});
  return {};
}

// Loads `rules` in the caller's current network namespace.
Result<void> load(const std::string& rules, const char* where) {
  nft_ctx* ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  if (ctx == nullptr)
    return std::unexpected(Error{"load nftables rules", where, "nft_ctx_new failed"});
  nft_ctx_buffer_output(ctx);
  nft_ctx_buffer_error(ctx);
  const int rc = nft_run_cmd_from_buffer(ctx, rules.c_str());
  std::string why = nft_ctx_get_error_buffer(ctx);
  nft_ctx_free(ctx);
  if (rc == 0) return {};
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  if (why.find("Operation not permitted") != std::string::npos)
    why += " (network mode filtered needs root or CAP_NET_ADMIN; use mode proxy without them)";
  return std::unexpected(Error{"load nftables rules", where, why.empty() ? "failed" : why});
}

// The veth, its addresses and the jail's route. Starts in the host's
// namespace; the calling thread ends in the jail's.
Result<void> give_veth(int netns, std::uint32_t start) {
  auto index = create_veth(netns, start);
  if (!index) {
    if (index.error().sys_errno == EPERM)
      index.error().why +=
          " (network mode filtered needs root or CAP_NET_ADMIN; use mode proxy without them)";
    return std::unexpected(std::move(index.error()));
  }
  BRIG_TRY_VOID(address_and_up(kVethPrefix + std::to_string(*index), host_address(*index), 30));
  if (::setns(netns, CLONE_NEWNET) != 0)
    return std::unexpected(sys_error("join", "the jail's network namespace", errno));
  BRIG_TRY_VOID(address_and_up("eth0", jail_address(*index), 30));
  BRIG_TRY_VOID(default_route(host_address(*index)));
  return {};
}

Result<void> run() {
  const std::string jail_rules = BRIG_TRY(read_all(0));
  BRIG_TRY_VOID(check_forwarding());
  // The host's table is the same for every jail: loaded when it is missing
  // or does not hold its rules (a flushed ruleset, an older brig's table).
  // Replacing it costs the most of all this (its hooks are registered
  // again), and concurrent loads of it are safe either way.
  if (BRIG_TRY(inet_table_rules("brig_filtered")) != host_rule_count())
    BRIG_TRY_VOID(load(host_ruleset(), "the host's table inet brig_filtered"));
  std::uint32_t start = 0;
  if (::getrandom(&start, sizeof start, 0) != sizeof start)
    start = static_cast<std::uint32_t>(::getpid());
  int fds[kMaxMessageFds];
  std::size_t nfds = 0;
  char go = 0;
  if (int e = receive_with_fds(kNetnsSock, &go, 1, fds, &nfds); e != 0 || nfds != 1) {
    for (std::size_t i = 0; i < nfds; ++i) ::close(fds[i]);
    // The launcher gave up before the namespace existed: nothing to do.
    return std::unexpected(Error{"wait for the jail's network namespace", "",
                                 e == 0 ? "no namespace came" : std::strerror(e)});
  }
  const UniqueFd netns(fds[0]);
  // The jail's rules name no interface but lo, so they load while the veth
  // is made: on a thread of their own in the jail's namespace (setns
  // moves only the calling thread).
  Result<void> rules_loaded = std::unexpected(Error{"load nftables rules", "", "not run"});
  std::thread rules([&] {
    if (::setns(netns.get(), CLONE_NEWNET) != 0)
      rules_loaded = std::unexpected(sys_error("join", "the jail's network namespace", errno));
    else
      rules_loaded = load(jail_rules, "the jail's table inet brig");
  });
  auto veth = give_veth(netns.get(), start % kMaxVeths);
  rules.join();
  BRIG_TRY_VOID(veth);
  BRIG_TRY_VOID(rules_loaded);
  return {};
}

}  // namespace
}  // namespace brig::jail::netfilter

int main() {
  auto ok = brig::jail::netfilter::run();
  if (ok) return 0;
  std::fprintf(stderr, "%s\n", ok.error().to_string().c_str());
  return 1;
}
