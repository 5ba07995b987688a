#include "server/llm/upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "server/egress/resolver.h"
#include "server/policy/net_rules.h"

namespace brig::llm {
namespace {

int ms_until(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60'000));
}

std::string ssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out;
}

// The target's addresses: a literal as it is, a name through c-ares on a
// small poll loop of its own (getaddrinfo needs NSS, which a static `brig`
// lacks; docs/llm.md).
Result<std::vector<policy::Address>> resolve(const std::string& host, Clock::time_point deadline,
                                             int cancel) {
  if (auto literal = policy::parse_address(host)) return std::vector{*literal};
  std::vector<pollfd> fds;
  std::set<int> watched;
  auto resolver = egress::Resolver::create({}, [&](int fd, bool r, bool w) {
    if (!r && !w) {
      watched.erase(fd);
      return;
    }
    watched.insert(fd);
  });
  if (!resolver) return std::unexpected(resolver.error());
  (*resolver)->lookup(1, host, AF_UNSPEC);
  for (;;) {
    auto answers = (*resolver)->take_answers();
    if (!answers.empty()) {
      const auto& a = answers.front();
      if (a.status == egress::Resolver::Status::ok) return a.addresses;
      return std::unexpected(Error{"resolve", host,
                                   a.status == egress::Resolver::Status::failed
                                       ? "the name servers did not answer"
                                       : "the name has no address"});
    }
    if (Clock::now() >= deadline)
      return std::unexpected(Error{"resolve", host, "no answer in time", ETIMEDOUT});
    fds.clear();
    for (int fd : watched) fds.push_back(pollfd{fd, POLLIN, 0});
    if (cancel >= 0) fds.push_back(pollfd{cancel, POLLRDHUP, 0});
    int wait = ms_until(deadline);
    if (auto t = (*resolver)->timeout()) wait = std::min<int>(wait, static_cast<int>(t->count()));
    const int n = ::poll(fds.data(), fds.size(), wait);
    if (n < 0 && errno != EINTR) return std::unexpected(sys_error("resolve", host, errno));
    bool any = false;
    for (const pollfd& p : fds) {
      if (p.fd == cancel && cancel >= 0) {
        if (p.revents != 0) return std::unexpected(Error{"resolve", host, "cancelled", ECANCELED});
        continue;
      }
      if (p.revents != 0) {
        (*resolver)->process(p.fd, true, false);
        any = true;
      }
    }
    if (!any) (*resolver)->process(-1, false, false);
  }
}

}  // namespace

Io wait_for(int fd, short events, Clock::time_point deadline, int cancel) {
  for (;;) {
    pollfd fds[2] = {{fd, events, 0}, {cancel, POLLRDHUP, 0}};
    const int n = ::poll(fds, cancel >= 0 ? 2 : 1, ms_until(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Io::error;
    }
    if (cancel >= 0 && fds[1].revents != 0) return Io::cancelled;
    if (fds[0].revents != 0) return Io::ok;  // errors and hangups show in the next call
    if (Clock::now() >= deadline) return Io::timeout;
  }
}

Io write_all_fd(int fd, std::string_view bytes, Clock::time_point deadline, int cancel) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Io w = wait_for(fd, POLLOUT, deadline, cancel); w != Io::ok) return w;
      continue;
    }
    return Io::error;
  }
  return Io::ok;
}

TlsContext::~TlsContext() {
  if (ctx != nullptr) SSL_CTX_free(ctx);
}

Result<std::unique_ptr<TlsContext>> make_tls_context(const Route& route) {
  auto out = std::make_unique<TlsContext>();
  if (!route.target.tls) return out;
  const std::string what = fmt::format("set up TLS for the llm route \"{}\"", route.policy.prefix);
  out->ctx = SSL_CTX_new(TLS_client_method());
  if (out->ctx == nullptr) return std::unexpected(Error{what, "", ssl_errors()});
  SSL_CTX_set_min_proto_version(out->ctx, TLS1_2_VERSION);
  // No session tickets kept across connections beyond the pool's own.
  SSL_CTX_set_mode(out->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (route.policy.dangerously_skip_verify) {
    SSL_CTX_set_verify(out->ctx, SSL_VERIFY_NONE, nullptr);
  } else {
    SSL_CTX_set_verify(out->ctx, SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_set_default_verify_paths(out->ctx) != 1)
      return std::unexpected(Error{what, "the system trust store", ssl_errors()});
    if (!route.policy.ca_file.empty() &&
        SSL_CTX_load_verify_locations(out->ctx, route.policy.ca_file.c_str(), nullptr) != 1)
      return std::unexpected(
          Error{what, route.policy.ca_file, "cannot load it as PEM certificates: " + ssl_errors()});
  }
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(out->ctx, kAlpn, sizeof kAlpn);
  return out;
}

Result<std::unique_ptr<Upstream>> Upstream::open(const Route& route, const TlsContext* tls,
                                                 Clock::time_point deadline, int cancel) {
  const std::string where = fmt::format("{}:{}", route.target.host, route.target.port);
  auto addresses = resolve(route.target.host, deadline, cancel);
  if (!addresses)
    return std::unexpected(
        Error{"connect", where, addresses.error().why, addresses.error().sys_errno});
  std::string errors;
  bool timed_out = false;
  for (const policy::Address& a : *addresses) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (a.v6) {
      sockaddr_in6 in6{};
      in6.sin6_family = AF_INET6;
      in6.sin6_port = htons(route.target.port);
      std::memcpy(&in6.sin6_addr, a.bytes.data(), 16);
      std::memcpy(&ss, &in6, sizeof in6);
      len = sizeof in6;
    } else {
      sockaddr_in in{};
      in.sin_family = AF_INET;
      in.sin_port = htons(route.target.port);
      std::memcpy(&in.sin_addr, a.bytes.data(), 4);
      std::memcpy(&ss, &in, sizeof in);
      len = sizeof in;
    }
    UniqueFd fd(::socket(a.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return std::unexpected(sys_error("connect", where, errno));
    int err = 0;
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        const Io w = wait_for(fd.get(), POLLOUT, deadline, cancel);
        if (w == Io::cancelled)
          return std::unexpected(Error{"connect", where, "cancelled", ECANCELED});
        if (w == Io::timeout) {
          errors += fmt::format("{}{}: no connection in time", errors.empty() ? "" : "; ",
                                policy::address_text(a));
          timed_out = true;
          break;
        }
        socklen_t l = sizeof err;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &l);
      }
    }
    if (err != 0) {
      errors += fmt::format("{}{}: {}", errors.empty() ? "" : "; ", policy::address_text(a),
                            std::strerror(err));
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::unique_ptr<Upstream> up(new Upstream());
    up->fd_ = std::move(fd);
    if (tls != nullptr && tls->ctx != nullptr) {
      up->ssl_ = SSL_new(tls->ctx);
      if (up->ssl_ == nullptr) return std::unexpected(Error{"TLS", where, ssl_errors()});
      SSL_set_fd(up->ssl_, up->fd_.get());
      const std::string& host = route.target.host;
      if (!policy::parse_address(host)) {
        SSL_set_tlsext_host_name(up->ssl_, host.c_str());
        if (!route.policy.dangerously_skip_verify) SSL_set1_host(up->ssl_, host.c_str());
      } else if (!route.policy.dangerously_skip_verify) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(up->ssl_), host.c_str());
      }
      const Io h = up->handshake(deadline, cancel);
      if (h == Io::cancelled)
        return std::unexpected(Error{"connect", where, "cancelled", ECANCELED});
      if (h != Io::ok) {
        return std::unexpected(Error{"TLS handshake", where,
                                     h == Io::timeout ? "no handshake in time" : up->why_,
                                     h == Io::timeout ? ETIMEDOUT : 0});
      }
    }
    return up;
  }
  return std::unexpected(
      Error{"connect", where, errors.empty() ? "no address" : errors, timed_out ? ETIMEDOUT : 0});
}

Upstream::~Upstream() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

Io Upstream::handshake(Clock::time_point deadline, int cancel) {
  for (;;) {
    ERR_clear_error();
    const int r = SSL_connect(ssl_);
    if (r == 1) return Io::ok;
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      const Io w =
          wait_for(fd_.get(), e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, cancel);
      if (w != Io::ok) return w;
      continue;
    }
    const long verify = SSL_get_verify_result(ssl_);
    why_ = verify != X509_V_OK
               ? fmt::format("certificate verify failed: {}", X509_verify_cert_error_string(verify))
               : fmt::format("handshake failed: {}", ssl_errors());
    if (why_.ends_with(": ")) why_ += "the connection ended";
    return Io::error;
  }
}

Io Upstream::write_all(std::string_view bytes, Clock::time_point deadline, int cancel) {
  if (ssl_ == nullptr) return write_all_fd(fd_.get(), bytes, deadline, cancel);
  while (!bytes.empty()) {
    ERR_clear_error();
    std::size_t n = 0;
    const int r = SSL_write_ex(ssl_, bytes.data(), bytes.size(), &n);
    if (r == 1) {
      bytes.remove_prefix(n);
      continue;
    }
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      const Io w =
          wait_for(fd_.get(), e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, cancel);
      if (w != Io::ok) return w;
      continue;
    }
    why_ = ssl_errors();
    return Io::error;
  }
  return Io::ok;
}

Io Upstream::read_some(char* buf, std::size_t cap, std::size_t& got, Clock::time_point deadline,
                       int cancel) {
  got = 0;
  for (;;) {
    if (ssl_ == nullptr) {
      const ssize_t n = ::recv(fd_.get(), buf, cap, 0);
      if (n > 0) {
        got = static_cast<std::size_t>(n);
        return Io::ok;
      }
      if (n == 0) return Io::eof;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        why_ = std::strerror(errno);
        return Io::error;
      }
      if (Io w = wait_for(fd_.get(), POLLIN, deadline, cancel); w != Io::ok) return w;
      continue;
    }
    ERR_clear_error();
    const int r = SSL_read_ex(ssl_, buf, cap, &got);
    if (r == 1) return Io::ok;
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_ZERO_RETURN) return Io::eof;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      const Io w =
          wait_for(fd_.get(), e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, cancel);
      if (w != Io::ok) return w;
      continue;
    }
    // A peer that closes without close_notify: the end of a response framed
    // by the close, as far as HTTP is concerned.
    if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) return Io::eof;
    why_ = ssl_errors();
    if (why_.empty()) why_ = "the TLS connection failed";
    return Io::error;
  }
}

bool Upstream::idle_usable() {
  if (ssl_ != nullptr && SSL_pending(ssl_) > 0) return false;
  pollfd p{fd_.get(), POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) == 0) return true;
  if (ssl_ == nullptr || (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) return false;
  // TLS 1.3 servers send session tickets after the handshake: records that
  // are no data. Reading consumes them; only WANT_READ (nothing else came)
  // leaves the connection usable.
  ERR_clear_error();
  char byte;
  std::size_t got = 0;
  const int r = SSL_read_ex(ssl_, &byte, 1, &got);
  return r != 1 && SSL_get_error(ssl_, r) == SSL_ERROR_WANT_READ;
}

}  // namespace brig::llm
