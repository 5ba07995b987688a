#include "server/llm/proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "server/egress/http_framing.h"
#include "server/egress/http_head.h"
#include "server/llm/placeholder.h"
#include "server/llm/request.h"
#include "server/llm/upstream.h"
#include "server/llm/usage.h"

namespace brig::llm {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kChunk = 64 * 1024;
constexpr std::size_t kMaxResponseHead = 64 * 1024;
// Placeholders of ended jails remembered, to say "its jail has ended"
// rather than "not a placeholder" (a bounded courtesy, not a check).
constexpr std::size_t kMaxEnded = 4096;
// A refusal is written, then the client's leftovers (a body it was still
// sending) are read and dropped for at most this long, so that closing
// does not reset the connection before the client read the answer.
constexpr auto kLinger = 2000ms;
constexpr auto kFirstBackoff = 500ms;

bool retryable_status(int status) {
  return status == 429 || status == 503 || status == 529;
}

std::string path_without_query(std::string_view path) {
  return std::string(path.substr(0, path.find('?')));
}

std::string size_text(std::uint64_t bytes) {
  if (bytes < 10 * 1024) return fmt::format("{} B", bytes);
  if (bytes < 10 * 1024 * 1024) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} MiB", bytes / (1024 * 1024));
}

// One client connection, known to its jail so that removing the jail can
// shut both its sockets down from another thread. The fds change only
// under the jail's mutex, so a shutdown never hits a reused number.
struct Conn {
  int client = -1;
  int upstream = -1;
};

struct JailState {
  std::uint64_t id = 0;
  std::string label;
  std::string placeholder;
  UniqueFd listener;
  std::mutex mu;
  std::condition_variable cv;
  std::set<Conn*> conns;  // under mu
  bool removed = false;   // under mu
};

}  // namespace

struct Proxy::Impl : std::enable_shared_from_this<Proxy::Impl> {
  ProxyOptions options;
  std::vector<Route> routes;
  std::vector<Secret> keys;
  std::vector<std::unique_ptr<TlsContext>> tls;
  UniqueFd epoll;
  UniqueFd wake;
  std::thread acceptor;
  std::atomic<bool> stopping{false};

  mutable std::mutex mu;  // jails, ended, next_jail
  std::map<std::uint64_t, std::shared_ptr<JailState>> jails;
  std::deque<std::string> ended;
  std::uint64_t next_jail = 1;
  std::atomic<std::size_t> open{0};

  std::mutex pool_mu;
  std::vector<std::vector<std::pair<Clock::time_point, std::unique_ptr<Upstream>>>> pool;

  std::mutex threads_mu;
  std::condition_variable threads_cv;
  std::size_t threads = 0;  // under threads_mu

  void accept_loop();
  void accept_on(const std::shared_ptr<JailState>& jail);
  void remove(std::uint64_t id);
  void serve(std::shared_ptr<JailState> jail, int client);

  std::unique_ptr<Upstream> take_pooled(std::size_t route);
  void give_back(std::size_t route, std::unique_ptr<Upstream> up);
  // Which refusal a placeholder that is not this jail's deserves.
  std::pair<int, std::string> why_not(std::string_view offered, const Route& route);
};

namespace {

// The state of one request on one client connection.
class Exchange {
 public:
  Exchange(Proxy::Impl& proxy, JailState& jail, Conn& conn, std::string& pending)
      : p_(proxy), jail_(jail), conn_(conn), in_(pending) {
    record_.jail = jail.label;
  }

  // Serves one request whose head starts `in_`. Returns whether the
  // connection may carry another.
  bool run(egress::HeadParse& parse);
  // Answers with brig's own error; the connection ends.
  bool refuse(int status, std::string body);

 private:
  bool read_body(std::string& message, const egress::RequestHead& head);
  bool forward(const egress::RequestHead& head, std::size_t route, const std::string& path,
               const std::string& message);
  void set_upstream(Upstream* up);
  void finish();

  Proxy::Impl& p_;
  JailState& jail_;
  Conn& conn_;
  std::string& in_;
  LlmRecord record_;
  Clock::time_point start_ = Clock::now();
  bool finished_ = false;
};

void Exchange::finish() {
  if (finished_) return;
  finished_ = true;
  record_.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_);
  if (p_.options.audit) p_.options.audit(record_);
}

void Exchange::set_upstream(Upstream* up) {
  std::lock_guard lock(jail_.mu);
  conn_.upstream = up != nullptr ? up->fd() : -1;
  // Removed while connecting: the socket just made is shut down too.
  if (jail_.removed && up != nullptr) ::shutdown(up->fd(), SHUT_RDWR);
}

// Answers with brig's own error and ends the connection: what the client
// sent after the head is read and dropped for a while first.
bool Exchange::refuse(int status, std::string body) {
  record_.status = status;
  record_.error = body;
  const int fd = conn_.client;
  const auto answer = egress::error_response(status, "brig: " + body + "\n");
  if (write_all_fd(fd, answer, Clock::now() + kLinger, -1) == Io::ok) {
    ::shutdown(fd, SHUT_WR);
    const auto until = Clock::now() + kLinger;
    char buf[4096];
    while (wait_for(fd, POLLIN, until, -1) == Io::ok) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
    }
  }
  finish();
  return false;
}

bool Exchange::run(egress::HeadParse& parse) {
  using Status = egress::HeadParse::Status;
  if (parse.status == Status::too_large) return refuse(431, fmt::format("{}", parse.why));
  if (parse.status != Status::complete) return refuse(400, parse.why);
  const egress::RequestHead& head = parse.head;
  record_.method = head.method;
  record_.path = path_without_query(head.path);

  auto routed = route_request(p_.routes, head.path);
  if (!routed) {
    std::string prefixes;
    for (const Route& r : p_.routes)
      prefixes += fmt::format("{}/{}", prefixes.empty() ? "" : ", ", r.policy.prefix);
    return refuse(
        404, fmt::format("no LLM route serves {}; the routes here are {}", record_.path, prefixes));
  }
  const Route& route = p_.routes[routed->route];
  record_.route = route.policy.prefix;

  const Presented presented = presented_keys(head, route);
  if (!presented.malformed.empty())
    return refuse(401, fmt::format("{}: send this jail's placeholder ${} as x-api-key or "
                                   "Authorization: Bearer",
                                   presented.malformed.front(), route.policy.key_variable));
  if (presented.keys.empty())
    return refuse(401, fmt::format("no key in the request: send this jail's placeholder ${} as "
                                   "x-api-key or Authorization: Bearer",
                                   route.policy.key_variable));
  for (std::string_view key : presented.keys) {
    if (same_placeholder(key, jail_.placeholder)) continue;
    auto [status, why] = p_.why_not(key, route);
    return refuse(status, why);
  }

  std::string message;
  if (!read_body(message, head)) return false;
  const bool keep = forward(head, routed->route, routed->upstream_path, message);
  finish();
  return keep && client_keeps_alive(head);
}

// The whole request (head and body, framed as the client framed it) into
// `message`: bodies are buffered, up to max_body, so that a retry can send
// them again. Bytes after the request stay in in_ (a pipelined request).
bool Exchange::read_body(std::string& message, const egress::RequestHead& head) {
  const int fd = conn_.client;
  if (expects_continue(head) &&
      write_all_fd(fd, "HTTP/1.1 100 Continue\r\n\r\n", Clock::now() + p_.options.head_timeout,
                   -1) != Io::ok) {
    finish();
    return false;
  }
  egress::MessageFilter filter(egress::MessageFilter::Kind::request);
  std::vector<char> buf(kChunk);
  for (;;) {
    const std::size_t n = filter.pass(in_);
    message.append(in_, 0, n);
    in_.erase(0, n);
    if (filter.failed())
      return refuse(400, fmt::format("malformed request body: {}", filter.why()));
    if (message.size() > head.size + p_.options.max_body) {
      return refuse(413, fmt::format("the request body is over {} bytes, the most the LLM proxy "
                                     "takes",
                                     p_.options.max_body));
    }
    if (filter.done()) return true;
    const Io w = wait_for(fd, POLLIN, Clock::now() + p_.options.head_timeout, -1);
    if (w == Io::timeout) return refuse(408, "the request body stopped arriving");
    if (w != Io::ok) {
      finish();
      return false;
    }
    const ssize_t got = ::recv(fd, buf.data(), buf.size(), 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      record_.error = "the client went away while sending the body";
      finish();
      return false;
    }
    in_.append(buf.data(), static_cast<std::size_t>(got));
  }
}

// Sends the request to the route's target (retrying before the first
// response byte only) and streams the response back. Returns whether the
// client connection is still in step for another request.
bool Exchange::forward(const egress::RequestHead& head, std::size_t route_index,
                       const std::string& path, const std::string& message) {
  const ProxyOptions& o = p_.options;
  const Route& route = p_.routes[route_index];
  const std::string where = fmt::format("{}:{}", route.target.host, route.target.port);
  const int client = conn_.client;
  const std::string_view body = std::string_view(message).substr(head.size);
  record_.bytes_up = body.size();

  std::unique_ptr<Upstream> up;
  std::string response;  // what was read of the response so far
  std::optional<ResponseHead> rhead;
  std::chrono::milliseconds waited{0};
  std::vector<char> buf(kChunk);
  auto drop_upstream = [&] {
    set_upstream(nullptr);
    up.reset();
  };

  for (int attempt = 0; attempt < o.max_attempts;) {
    response.clear();
    bool pooled = false;
    up = p_.take_pooled(route_index);
    if (up) {
      pooled = true;
    } else {
      auto opened = Upstream::open(route, p_.tls[route_index].get(),
                                   Clock::now() + o.connect_timeout, client);
      if (!opened) {
        if (opened.error().sys_errno == ECANCELED) {
          record_.error = "the client went away";
          return false;
        }
        const bool timeout = opened.error().sys_errno == ETIMEDOUT;
        const std::string why = fmt::format("cannot reach the llm route \"{}\"'s target {}: {}",
                                            route.policy.prefix, where, opened.error().why);
        if (++attempt < o.max_attempts && waited + kFirstBackoff * attempt <= o.max_retry_wait) {
          waited += kFirstBackoff * attempt;
          if (wait_for(client, 0, Clock::now() + kFirstBackoff * attempt, client) == Io::cancelled)
            return false;
          continue;
        }
        record_.attempts = attempt;
        return refuse(timeout ? 504 : 502, why);
      }
      up = std::move(*opened);
    }
    set_upstream(up.get());

    // The real key exists in this string only while it is written.
    std::string out = upstream_request_head(head, route, path, p_.keys[route_index].reveal());
    Io w = up->write_all(out, Clock::now() + o.first_byte_timeout, client);
    wipe(out);
    if (w == Io::ok && !body.empty())
      w = up->write_all(body, Clock::now() + o.first_byte_timeout, client);
    if (w == Io::cancelled) {
      record_.error = "the client went away";
      drop_upstream();
      return false;
    }
    if (w != Io::ok && pooled) {
      drop_upstream();  // an idle connection the upstream had closed: a fresh one
      continue;
    }
    if (w != Io::ok) {
      drop_upstream();
      record_.attempts = attempt + 1;
      return refuse(w == Io::timeout ? 504 : 502,
                    fmt::format("sending the request to {} failed{}", where,
                                w == Io::timeout ? ": no progress in time" : ""));
    }

    // The response head: the first byte decides nothing yet, the head does
    // (a 429 may still be retried).
    const auto first_deadline = Clock::now() + o.first_byte_timeout;
    bool bad = false;
    Io r = Io::ok;
    while (!rhead) {
      std::size_t got = 0;
      r = up->read_some(buf.data(), buf.size(), got, first_deadline, client);
      if (r != Io::ok) break;
      if (response.empty() && !record_.first_byte)
        record_.first_byte =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_);
      response.append(buf.data(), got);
      rhead = parse_response_head(response, kMaxResponseHead, bad);
      if (bad) break;
    }
    if (r == Io::cancelled) {
      record_.error = "the client went away before the response";
      drop_upstream();
      return false;
    }
    if (!rhead && pooled && response.empty() && (r == Io::eof || r == Io::error)) {
      drop_upstream();
      continue;
    }
    if (!rhead) {
      const std::string why = r == Io::error ? ": " + up->why() : "";
      drop_upstream();
      record_.attempts = attempt + 1;
      if (bad) return refuse(502, fmt::format("{} answered with a malformed response head", where));
      if (r == Io::timeout)
        return refuse(504, fmt::format("{} sent no response within {} ms", where,
                                       o.first_byte_timeout.count()));
      return refuse(502, fmt::format("{} closed the connection before its response{}", where, why));
    }
    record_.attempts = ++attempt;
    if (retryable_status(rhead->status) && attempt < o.max_attempts) {
      const auto delay = rhead->retry_after_seconds
                             ? std::chrono::milliseconds(*rhead->retry_after_seconds * 1000)
                             : kFirstBackoff * (1 << (attempt - 1));
      if (waited + delay <= o.max_retry_wait) {
        waited += delay;
        drop_upstream();
        rhead.reset();
        record_.first_byte.reset();
        if (wait_for(client, 0, Clock::now() + delay, client) == Io::cancelled) {
          record_.error = "the client went away while brig waited to retry";
          return false;
        }
        continue;
      }
    }
    break;
  }
  if (!rhead) return refuse(502, fmt::format("{} gave no response", where));
  record_.attempts = std::max(record_.attempts, 1);
  record_.status = rhead->status;

  // Streaming: every byte read is written before the next read, so a slow
  // client slows the upstream (no buffering beyond one chunk).
  egress::MessageFilter filter(egress::MessageFilter::Kind::response, head.method == "HEAD");
  UsageScanner usage;
  bool eof = false;
  bool extra = false;
  bool client_gone = false;
  std::string_view chunk = response;
  for (;;) {
    const std::size_t n = filter.pass(chunk);
    if (filter.failed()) {
      record_.error = fmt::format("malformed response from {}: {}", where, filter.why());
      break;
    }
    if (n > 0) {
      usage.feed(chunk.substr(0, n));
      if (write_all_fd(client, chunk.substr(0, n), Clock::now() + o.idle_timeout, -1) != Io::ok) {
        client_gone = true;
        record_.error = "the client went away during the response";
        break;
      }
      record_.bytes_down += n;
    }
    if (n < chunk.size()) extra = true;  // more than one response: not reused
    if (filter.done() || extra) break;
    std::size_t got = 0;
    const Io r = up->read_some(buf.data(), buf.size(), got, Clock::now() + o.idle_timeout, client);
    if (r == Io::ok) {
      chunk = std::string_view(buf.data(), got);
      continue;
    }
    if (r == Io::eof) {
      eof = true;
      filter.end();
      break;
    }
    if (r == Io::cancelled) {
      client_gone = true;
      record_.error =
          "the client went away during the response: the upstream request was cancelled";
    } else {
      record_.error = r == Io::timeout
                          ? fmt::format("{} sent nothing for {} ms: the response was cut", where,
                                        o.idle_timeout.count())
                          : fmt::format("the connection to {} failed mid-response", where);
    }
    break;
  }
  const Usage u = usage.usage();
  record_.input_tokens = u.input_tokens;
  record_.output_tokens = u.output_tokens;

  const bool complete = filter.done() && !filter.failed() && !client_gone && record_.error.empty();
  const bool reusable = complete && !eof && !extra && !rhead->close && head.version_minor == 1;
  if (reusable) {
    set_upstream(nullptr);
    p_.give_back(route_index, std::move(up));
  } else {
    drop_upstream();
  }
  // A response that ended with the upstream's close, or was cut, ends the
  // client's connection too: the client reads its end from that.
  return complete && !eof && !rhead->close;
}

}  // namespace

std::string describe(const LlmRecord& r) {
  std::string out =
      fmt::format("{} {} {}: {}", r.route.empty() ? "-" : r.route, r.method, r.path, r.status);
  if (!r.error.empty()) out += fmt::format(" ({})", r.error);
  out += fmt::format(", {} up, {} down", size_text(r.bytes_up), size_text(r.bytes_down));
  if (r.first_byte) out += fmt::format(", first byte {} ms", r.first_byte->count());
  if (r.input_tokens || r.output_tokens)
    out += fmt::format(", tokens {} in / {} out", r.input_tokens.value_or(0),
                       r.output_tokens.value_or(0));
  return out;
}

std::pair<int, std::string> Proxy::Impl::why_not(std::string_view offered, const Route& route) {
  const std::string var = "$" + route.policy.key_variable;
  std::lock_guard lock(mu);
  for (const auto& [id, other] : jails) {
    if (same_placeholder(offered, other->placeholder))
      return {403, fmt::format("that key is another jail's placeholder, refused on this jail's "
                               "listener; use this jail's own {}",
                               var)};
  }
  for (const std::string& e : ended) {
    if (same_placeholder(offered, e))
      return {403, fmt::format("that key is the placeholder of a jail that has ended; use this "
                               "jail's own {}",
                               var)};
  }
  return {401, fmt::format("that key is not this jail's placeholder (no real key and no made-up "
                           "one is accepted here); use {}",
                           var)};
}

std::unique_ptr<Upstream> Proxy::Impl::take_pooled(std::size_t route) {
  std::lock_guard lock(pool_mu);
  auto& idle = pool[route];
  while (!idle.empty()) {
    auto [since, up] = std::move(idle.back());
    idle.pop_back();
    if (Clock::now() - since < options.pool_idle && up->idle_usable()) return std::move(up);
  }
  return nullptr;
}

void Proxy::Impl::give_back(std::size_t route, std::unique_ptr<Upstream> up) {
  if (stopping) return;
  std::lock_guard lock(pool_mu);
  auto& idle = pool[route];
  if (idle.size() >= options.max_pooled_per_route) idle.erase(idle.begin());
  idle.emplace_back(Clock::now(), std::move(up));
}

// SSL_write to a socket whose peer is gone raises SIGPIPE in the writing
// thread (OpenSSL sends without MSG_NOSIGNAL); blocked, it stays pending
// and harmless, whatever the process does with the signal.
static void block_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void Proxy::Impl::serve(std::shared_ptr<JailState> jail, int client) {
  block_sigpipe();
  Conn conn;
  conn.client = client;
  {
    std::lock_guard lock(jail->mu);
    jail->conns.insert(&conn);
    if (jail->removed) ::shutdown(client, SHUT_RDWR);
  }
  std::string in;
  std::vector<char> buf(16 * 1024);
  for (bool first = true;; first = false) {
    const auto deadline = Clock::now() + (first ? options.head_timeout : options.keep_alive);
    egress::HeadParse parse;
    bool closed = false;
    for (;;) {
      const bool may_end = in.find("\r\n\r\n") != std::string::npos ||
                           in.find("\n\n") != std::string::npos || in.size() > options.max_head;
      if (may_end) {
        parse = egress::parse_request_head(in, options.max_head, egress::RequestForm::origin);
        if (parse.status != egress::HeadParse::Status::incomplete) break;
      }
      const Io w = wait_for(client, POLLIN, deadline, -1);
      if (w == Io::timeout && in.empty() && !first) {
        closed = true;  // an idle keep-alive connection: closed quietly
        break;
      }
      if (w == Io::timeout) {
        Exchange(*this, *jail, conn, in)
            .refuse(408, fmt::format("the request head did not arrive within {} ms",
                                     (first ? options.head_timeout : options.keep_alive).count()));
        closed = true;
        break;
      }
      const ssize_t n = ::recv(client, buf.data(), buf.size(), 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        closed = true;
        break;
      }
      in.append(buf.data(), static_cast<std::size_t>(n));
    }
    if (closed) break;
    if (!Exchange(*this, *jail, conn, in).run(parse)) break;
  }
  {
    std::lock_guard lock(jail->mu);
    jail->conns.erase(&conn);
    ::close(client);
    --open;  // before remove_jail can return: it counts as closed
  }
  jail->cv.notify_all();
  std::lock_guard lock(threads_mu);
  --threads;
  threads_cv.notify_all();
}

void Proxy::Impl::accept_on(const std::shared_ptr<JailState>& jail) {
  for (int i = 0; i < 16; ++i) {
    int fd = -1;
    bool over = false;
    {
      std::lock_guard lock(jail->mu);
      if (jail->removed || !jail->listener) return;
      fd = ::accept4(jail->listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN: the listener reports the next one
      over =
          jail->conns.size() >= options.max_connections_per_jail || open >= options.max_connections;
    }
    if (over) {
      const auto answer = egress::error_response(
          503,
          "brig: too many connections to the LLM proxy are open; retry when some have ended\n");
      [[maybe_unused]] auto n = ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
      ::close(fd);
      if (options.audit) {
        LlmRecord r;
        r.jail = jail->label;
        r.status = 503;
        r.error = "too many connections";
        options.audit(r);
      }
      continue;
    }
    ++open;
    {
      std::lock_guard lock(threads_mu);
      ++threads;
    }
    try {
      std::thread([self = shared_from_this(), jail, fd] { self->serve(jail, fd); }).detach();
    } catch (const std::system_error&) {
      // Out of threads (RLIMIT_NPROC, memory): this connection is closed,
      // the proxy goes on.
      ::close(fd);
      --open;
      std::lock_guard lock(threads_mu);
      --threads;
      threads_cv.notify_all();
    }
  }
}

void Proxy::Impl::accept_loop() {
  block_sigpipe();  // inherited by the connections' threads too
  epoll_event events[64];
  while (!stopping) {
    const int n = ::epoll_wait(epoll.get(), events, 64, -1);
    for (int i = 0; i < n; ++i) {
      const std::uint64_t id = events[i].data.u64;
      if (id == 0) {
        std::uint64_t count;
        [[maybe_unused]] auto r = ::read(wake.get(), &count, sizeof count);
        continue;
      }
      std::shared_ptr<JailState> jail;
      {
        std::lock_guard lock(mu);
        auto it = jails.find(id);
        if (it != jails.end()) jail = it->second;
      }
      if (jail) accept_on(jail);
    }
  }
}

void Proxy::Impl::remove(std::uint64_t id) {
  std::shared_ptr<JailState> jail;
  {
    std::lock_guard lock(mu);
    auto it = jails.find(id);
    if (it == jails.end()) return;
    jail = it->second;
    jails.erase(it);
    ended.push_back(jail->placeholder);
    if (ended.size() > kMaxEnded) ended.pop_front();
  }
  std::unique_lock lock(jail->mu);
  jail->removed = true;
  ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, jail->listener.get(), nullptr);
  jail->listener.reset();
  for (Conn* c : jail->conns) {
    ::shutdown(c->client, SHUT_RDWR);
    if (c->upstream >= 0) ::shutdown(c->upstream, SHUT_RDWR);
  }
  jail->cv.wait(lock, [&] { return jail->conns.empty(); });
}

Proxy::Proxy(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Proxy>> Proxy::start(const std::vector<policy::LlmRoute>& routes,
                                            std::vector<Secret> keys, ProxyOptions options) {
  if (keys.size() != routes.size())
    return std::unexpected(Error{"start the LLM proxy", "", "one key per route"});
  auto impl = std::make_shared<Impl>();
  impl->options = std::move(options);
  for (const policy::LlmRoute& r : routes) {
    auto target = policy::parse_llm_target(r.target);
    if (!target) return std::unexpected(Error{"start the LLM proxy", r.target, target.error().why});
    impl->routes.push_back(Route{r, *target});
    impl->tls.push_back(BRIG_TRY(make_tls_context(impl->routes.back())));
  }
  impl->keys = std::move(keys);
  impl->pool.resize(routes.size());
  impl->epoll.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!impl->epoll) return std::unexpected(sys_error("start the LLM proxy", "epoll", errno));
  impl->wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!impl->wake) return std::unexpected(sys_error("start the LLM proxy", "eventfd", errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  ::epoll_ctl(impl->epoll.get(), EPOLL_CTL_ADD, impl->wake.get(), &ev);
  impl->acceptor = std::thread([raw = impl.get()] { raw->accept_loop(); });
  return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Proxy::~Proxy() {
  impl_->stopping = true;
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(impl_->wake.get(), &one, sizeof one);
  impl_->acceptor.join();
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& [id, jail] : impl_->jails) ids.push_back(id);
  }
  for (std::uint64_t id : ids) impl_->remove(id);
  std::unique_lock lock(impl_->threads_mu);
  impl_->threads_cv.wait(lock, [&] { return impl_->threads == 0; });
  std::lock_guard pool_lock(impl_->pool_mu);
  impl_->pool.clear();
}

std::uint64_t Proxy::add_jail(std::string jail, std::string placeholder, UniqueFd listener) {
  auto state = std::make_shared<JailState>();
  state->label = std::move(jail);
  state->placeholder = std::move(placeholder);
  state->listener = std::move(listener);
  std::uint64_t id;
  {
    std::lock_guard lock(impl_->mu);
    id = state->id = impl_->next_jail++;
    impl_->jails.emplace(id, state);
  }
  int flags = ::fcntl(state->listener.get(), F_GETFL);
  if (flags >= 0) ::fcntl(state->listener.get(), F_SETFL, flags | O_NONBLOCK);
  // Level-triggered: what one turn leaves is reported again.
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = id;
  ::epoll_ctl(impl_->epoll.get(), EPOLL_CTL_ADD, state->listener.get(), &ev);
  return id;
}

void Proxy::remove_jail(std::uint64_t id) {
  impl_->remove(id);
}

std::size_t Proxy::connections() const {
  return impl_->open.load();
}

Result<std::vector<Secret>> load_keys(const std::vector<policy::LlmRoute>& routes,
                                      const policy::EnvMap& env) {
  std::vector<Secret> keys;
  for (const policy::LlmRoute& r : routes) keys.push_back(BRIG_TRY(load_key(r, env)));
  return keys;
}

}  // namespace brig::llm
