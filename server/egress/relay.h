// Relay: brig's egress proxy and DNS stub, outside every jail. A jail in
// `proxy` mode has only loopback; its network helper made listeners on the
// jail's 127.0.0.1 (an HTTP proxy port, DNS on 53 over UDP and TCP) and the
// launcher handed them here. Connections the jail makes to them are
// accepted in brig's own network namespace, decided against the policy's
// NetRules, and relayed to the upstream: this is the only way out.
//
// One thread with its own epoll loop (no asio: `brig run` runs a Relay too,
// and the front end stays small), so a flood of proxy traffic never stalls
// the MCP sessions. Names are resolved asynchronously on that loop with
// c-ares, which reads the host's /etc/resolv.conf and /etc/hosts (a static
// `brig` cannot use getaddrinfo: it needs NSS). Tunnels move their bytes
// with splice(2) through pooled pipes, so an idle connection holds two
// sockets and no buffer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "server/policy/net_rules.h"

namespace brig::egress {

// A jail's listeners on its own 127.0.0.1, already bound and listening,
// non-blocking; any may be empty (not served). The ports are the policy's
// (policy::kProxyPort, policy::kDnsPort).
struct JailListeners {
  UniqueFd proxy;    // TCP, the HTTP proxy (HTTP_PROXY and the others point at it)
  UniqueFd dns_udp;  // UDP, the DNS stub
  UniqueFd dns_tcp;  // TCP, the DNS stub
};

// The listeners a jail planned with policy::egress_listeners() got, in that
// order; missing ones stay empty.
JailListeners jail_listeners(std::vector<UniqueFd> fds);

// One decision, for the audit log. Connections are reported once, when they
// end (with the bytes each way); a refusal when it is answered.
struct EgressRecord {
  enum class Kind { connect, http, dns };
  std::string jail;  // the label add_jail was given
  Kind kind = Kind::connect;
  std::string host;  // as the jail named it
  std::uint16_t port = 0;
  bool allowed = false;
  std::string rule;     // the deciding rule's text, or why nothing allowed it
  std::string address;  // the upstream address used ("" if none)
  int status = 0;       // http/connect: the status brig answered (200 for a tunnel); dns: rcode
  std::uint64_t bytes_up = 0;    // jail -> upstream
  std::uint64_t bytes_down = 0;  // upstream -> jail
};

// One line for a person: "refused CONNECT evil.example:443 (no allow rule
// names it): 403", "allowed HTTP pypi.org:80 (pypi.org) via 151.101.0.223:
// 200, 312 B up, 18 KiB down".
std::string describe(const EgressRecord& record);

struct RelayOptions {
  std::size_t max_head = 16 * 1024;                   // 431 past this
  std::chrono::milliseconds head_timeout{10'000};     // 408 when the head is not complete by then
  std::chrono::milliseconds connect_timeout{10'000};  // 504 when resolving + connecting take longer
  std::chrono::milliseconds idle_timeout{0};          // 0: a tunnel may idle forever
  std::size_t max_connections_per_jail = 512;         // then 503 (and DNS over TCP closed)
  // All jails together, likewise. 0: from the fd limit start() leaves,
  // (soft limit - 256) / 4, since a tunnel may hold two sockets and the two
  // fds of a pipe; the 256 are for the pooled pipes, c-ares and the rest of
  // the process.
  std::size_t max_connections = 0;
  // Per jail: refusals (and DNS answers) beyond this many a second are not
  // given to `audit` one by one but counted, and one record says how many
  // were left out, once the second is over (or the jail is removed). A jail
  // decides how many it provokes; allowed connections are each recorded.
  std::size_t max_refusal_records_per_second = 20;
  // DNS queries over UDP awaiting the resolver, per jail; more are dropped.
  std::size_t max_dns_pending_per_jail = 256;
  // Name servers to ask instead of the host's resolv.conf: "127.0.0.1:5353",
  // "[::1]:53". /etc/hosts is read either way.
  std::vector<std::string> resolvers;
  // Called on the relay's thread for every EgressRecord; keep it short. DNS
  // records: port 0, status the rcode, address the addresses answered. The
  // summary of suppressed ones: kind http, refused, host "", status 0, rule
  // "N more refusals and DNS answers suppressed (...)".
  std::function<void(const EgressRecord&)> audit;
};

class Relay {
 public:
  // Also raises this process's RLIMIT_NOFILE soft limit to its hard limit
  // (process-wide, for good): every relayed connection costs fds, and both
  // `brig run` and `brig serve` want all they may have. max_connections
  // defaults from the limit it leaves.
  static Result<std::unique_ptr<Relay>> start(RelayOptions options);
  // Stops the thread; every listener and connection is closed.
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Thread-safe. Serves `listeners` for the jail labelled `jail` under
  // `rules` until remove_jail(id).
  std::uint64_t add_jail(std::string jail, policy::NetRules rules, JailListeners listeners);
  // Thread-safe. Closes the jail's listeners and every connection it has
  // open (upstream sides too) before it returns. Unknown ids are ignored.
  // Called from the audit callback (the relay's own thread) it cannot wait:
  // the jail is then closed right after the current event.
  void remove_jail(std::uint64_t id);

  // Connections open now, all jails (for tests and the memory bench).
  std::size_t connections() const;

 private:
  struct Impl;
  explicit Relay(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brig::egress
