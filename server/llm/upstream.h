// Upstream: one connection from the LLM proxy to a route's target, plain
// TCP or TLS (OpenSSL), on a non-blocking socket driven with poll(2) by the
// thread serving the request. Every wait has a deadline and watches the
// jail's side (`cancel`): a client that hangs up, or a jail removed from the
// proxy (which shuts its sockets down), ends the wait at once.
//
// TLS is verified against the system's trust store plus the route's
// ca_file, with SNI and the host name (or IP address) checked, TLS 1.2 at
// least; dangerously_skip_verify turns verification off for that route.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "server/llm/request.h"

namespace brig::llm {

using Clock = std::chrono::steady_clock;

// How a wait ended.
enum class Io { ok, eof, timeout, cancelled, error };

// Waits until `fd` has `events` (POLLIN/POLLOUT), the deadline passes, or
// `cancel` (a client socket, -1 for none) hangs up.
Io wait_for(int fd, short events, Clock::time_point deadline, int cancel);

// Writes all of `bytes` to the socket `fd`.
Io write_all_fd(int fd, std::string_view bytes, Clock::time_point deadline, int cancel);

// A route's TLS settings, made once when the proxy starts (the trust store
// and ca_file are read then). Null for a plain http:// route.
struct TlsContext {
  SSL_CTX* ctx = nullptr;
  ~TlsContext();
};
Result<std::unique_ptr<TlsContext>> make_tls_context(const Route& route);

class Upstream {
 public:
  // Resolves the target's host (c-ares, /etc/hosts first), connects to its
  // addresses in turn, and does the TLS handshake, all by `deadline`. The
  // error says which address and why (refused, timeout, certificate);
  // its sys_errno is ETIMEDOUT when time ran out, ECANCELED when `cancel`
  // hung up.
  static Result<std::unique_ptr<Upstream>> open(const Route& route, const TlsContext* tls,
                                                Clock::time_point deadline, int cancel);
  ~Upstream();
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  Io write_all(std::string_view bytes, Clock::time_point deadline, int cancel);
  // Reads what is there (at least one byte) into buf; `got` says how much.
  Io read_some(char* buf, std::size_t cap, std::size_t& got, Clock::time_point deadline,
               int cancel);
  // An idle pooled connection still usable: nothing to read, no EOF.
  bool idle_usable();
  int fd() const { return fd_.get(); }
  // Why the last call failed (an OpenSSL error or errno text).
  const std::string& why() const { return why_; }

 private:
  Upstream() = default;
  Io handshake(Clock::time_point deadline, int cancel);
  UniqueFd fd_;
  SSL* ssl_ = nullptr;
  std::string why_;
};

}  // namespace brig::llm
