#include "server/egress/relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "server/egress/dns_message.h"
#include "server/egress/flow.h"
#include "server/egress/http_framing.h"
#include "server/egress/http_head.h"
#include "server/egress/resolver.h"

namespace brig::egress {

namespace {

using Clock = std::chrono::steady_clock;
using policy::Address;

// Reads (or accepts, or datagrams) one connection or listener may take
// before the others get their turn: a flooding jail cannot starve another.
constexpr int kBudget = 16;
constexpr std::size_t kScratch = 64 * 1024;
constexpr std::size_t kKeptPipes = 32;
constexpr int kMaxEvents = 128;
// A refusal's answer is written, then the client's leftovers are read and
// dropped for at most this long, so closing does not reset the connection
// before the client read the answer.
constexpr std::chrono::milliseconds kLinger{2000};
// Classic DNS over UDP; an answer stays under it by carrying at most
// kMaxAnswers addresses.
constexpr std::size_t kUdpDnsLimit = 512;
constexpr std::size_t kMaxAnswers = 8;
constexpr std::uint32_t kStaticTtl = 300;
// Out of fds, the listeners leave the epoll set for this long: level-
// triggered, they would report the connection no accept can take at once,
// forever.
constexpr std::chrono::milliseconds kAcceptPause{100};
// Fds the default max_connections leaves to the rest of the process.
constexpr std::size_t kFdHeadroom = 256;
// The window of max_refusal_records_per_second.
constexpr std::chrono::seconds kAuditWindow{1};
constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";

// What an epoll event is about: the low 3 bits of its data, the id above.
enum class Tag : std::uint64_t { wake, proxy, dns_udp, dns_tcp, client, upstream, ares };
std::uint64_t token(Tag tag, std::uint64_t id) {
  return id << 3 | static_cast<std::uint64_t>(tag);
}

// Why an address is not one the proxy connects to unnamed (DNS rebinding).
std::string_view address_kind(const Address& a) {
  const auto& b = a.bytes;
  bool mapped = a.v6 && std::all_of(b.begin(), b.begin() + 10, [](auto x) { return x == 0; }) &&
                b[10] == 0xff && b[11] == 0xff;
  if (!a.v6 || mapped) {
    std::size_t o = mapped ? 12 : 0;
    if (b[o] == 127) return "loopback";
    if (b[o] == 169 && b[o + 1] == 254) return "link-local";
    if (b[o] == 10 || (b[o] == 172 && (b[o + 1] & 0xf0) == 16) || (b[o] == 192 && b[o + 1] == 168))
      return "private";
    return "not a global address";
  }
  bool zero_prefix = std::all_of(b.begin(), b.begin() + 15, [](auto x) { return x == 0; });
  if (zero_prefix && b[15] == 1) return "loopback";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";
  if ((b[0] & 0xfe) == 0xfc) return "private";
  return "not a global address";
}

std::optional<std::pair<sockaddr_storage, socklen_t>> socket_address(const Address& a,
                                                                     std::uint16_t port) {
  sockaddr_storage ss{};
  if (a.v6) {
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    std::memcpy(&in6.sin6_addr, a.bytes.data(), 16);
    std::memcpy(&ss, &in6, sizeof in6);
    return std::pair{ss, socklen_t{sizeof in6}};
  }
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  std::memcpy(&in.sin_addr, a.bytes.data(), 4);
  std::memcpy(&ss, &in, sizeof in);
  return std::pair{ss, socklen_t{sizeof in}};
}

// Whether the connected socket `fd` leads to this host: its local and peer
// addresses are one.
bool to_this_host(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof local, peer_len = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
    return false;
  if (local.ss_family != peer.ss_family) return false;
  if (local.ss_family == AF_INET)
    return reinterpret_cast<const sockaddr_in&>(local).sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in&>(peer).sin_addr.s_addr;
  if (local.ss_family == AF_INET6)
    return std::memcmp(&reinterpret_cast<const sockaddr_in6&>(local).sin6_addr,
                       &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr, 16) == 0;
  return false;
}

std::string join_addresses(std::span<const Address> addresses) {
  std::string out;
  for (const auto& a : addresses) out += (out.empty() ? "" : ",") + policy::address_text(a);
  return out;
}

// The ports the policy allows `name` on: a DNS answer keeps an address if
// the proxy would connect to it for one of them.
std::vector<std::uint16_t> allowed_ports(const policy::NetRules& rules, std::string_view name) {
  std::vector<std::uint16_t> ports;
  auto consider = [&](std::uint16_t p) {
    if (std::find(ports.begin(), ports.end(), p) == ports.end() &&
        policy::decide(rules, name, p).allowed)
      ports.push_back(p);
  };
  for (const auto& rule : rules.allow) {
    if (rule.port) {
      consider(*rule.port);
    } else {
      consider(80);
      consider(443);
    }
  }
  return ports;
}

std::vector<Address> dns_permitted(const policy::NetRules& rules, std::string_view name,
                                   std::span<const Address> addresses) {
  auto ports = allowed_ports(rules, name);
  std::vector<Address> kept;
  for (const auto& a : addresses) {
    bool ok = std::any_of(ports.begin(), ports.end(), [&](std::uint16_t p) {
      return policy::address_permitted(rules, name, a, p);
    });
    if (ok && kept.size() < kMaxAnswers) kept.push_back(a);
  }
  return kept;
}

// The rule that decides `name` for the DNS stub's audit record.
std::string dns_rule_text(const policy::NetRules& rules, std::string_view name) {
  for (std::uint16_t p : {std::uint16_t{443}, std::uint16_t{80}}) {
    auto v = policy::decide(rules, name, p);
    if (v.rule) return v.rule->text;
  }
  for (const auto& rule : rules.allow) {
    if (!rule.port) continue;
    auto v = policy::decide(rules, name, *rule.port);
    if (v.rule) return v.rule->text;
  }
  return "no allow rule names it";
}

// Could the bytes from `before` on have completed a head? Parsing only
// then keeps a head sent a byte at a time linear, not quadratic.
bool may_end_head(std::string_view in, std::size_t before) {
  std::size_t from = before >= 3 ? before - 3 : 0;
  return in.find("\n\r\n", from) != std::string_view::npos ||
         in.find("\n\n", from) != std::string_view::npos;
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && !(flags & O_NONBLOCK)) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

struct Jail {
  std::uint64_t id = 0;
  std::string label;
  policy::NetRules rules;
  JailListeners listeners;
  std::unordered_set<std::uint64_t> conns;  // proxy and DNS-over-TCP connections
  std::size_t dns_pending = 0;              // UDP queries awaiting the resolver
  // The audit's rate limit: refusals and DNS answers recorded in the window
  // that started at audit_window, and those left out of it.
  Clock::time_point audit_window;
  std::size_t audit_count = 0;
  std::uint64_t suppressed = 0;
};

struct Conn {
  enum class Kind { proxy, dns };
  enum class State {
    head,        // proxy: reading the request head
    resolving,   // proxy: waiting for the resolver
    connecting,  // proxy: a non-blocking connect to candidates[next - 1]
    relaying,    // proxy: both ways
    answering,   // proxy: writing a refusal, then lingering
    dns_read,    // dns: reading a length-prefixed query
    dns_wait,    // dns: waiting for the resolver
    dns_write,   // dns: writing the answer
  };
  std::uint64_t id = 0;
  Kind kind = Kind::proxy;
  State state = State::head;
  Jail* jail = nullptr;
  Endpoint client;
  Endpoint upstream;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point last_active;
  std::string in;  // the request head, or the DNS message, read so far
  EgressRecord record;
  bool decided = false;   // record describes an allowed request
  bool recorded = false;  // record was given to audit
  bool answered = false;  // answering: the answer is written, the client's leftovers are dropped
  std::uint64_t lookup = 0;
  std::vector<Address> candidates;
  std::size_t next = 0;
  std::string connect_errors;
  // Plain HTTP only: where the request and its response end.
  std::unique_ptr<MessageFilter> request;
  std::unique_ptr<MessageFilter> response;
  Flow up;    // client -> upstream
  Flow down;  // upstream -> client (and brig's own answers)
};

// Whom a resolver answer is for: a connection (proxy or DNS over TCP), or a
// UDP query (conn 0) to answer from the jail's listener.
struct Lookup {
  std::uint64_t jail = 0;
  std::uint64_t conn = 0;
  DnsQuery query;
  sockaddr_storage peer{};
  socklen_t peer_len = 0;
};

struct Relay::Impl {
  struct Command {
    std::uint64_t id = 0;
    std::unique_ptr<Jail> add;           // null: remove jail `id`
    std::promise<void>* done = nullptr;  // remove: set once it is done
  };

  RelayOptions options;
  UniqueFd epoll;
  UniqueFd wake;
  std::unique_ptr<Resolver> resolver;
  PipePool pipes{kKeptPipes};
  std::vector<char> scratch = std::vector<char>(kScratch);
  std::unordered_map<std::uint64_t, std::unique_ptr<Jail>> jails;
  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::uint64_t, Lookup> lookups;
  std::set<std::pair<Clock::time_point, std::uint64_t>> timers;
  std::vector<std::uint64_t> again;  // connections with work left over
  std::unordered_set<int> ares_fds;
  std::uint64_t next_conn = 1;
  std::uint64_t next_lookup = 1;
  std::size_t max_connections = 0;  // options.max_connections, or the default
  // Set while the TCP listeners are out of the epoll set (out of fds).
  std::optional<Clock::time_point> accept_paused_until;
  Clock::time_point now = Clock::now();
  std::atomic<std::size_t> open{0};
  std::atomic<std::uint64_t> next_jail{1};

  std::mutex mutex;
  std::vector<Command> commands;  // under mutex
  bool stopping = false;          // under mutex
  std::thread thread;

  // The loop.
  void run();
  int wait_ms() const;
  void dispatch(const epoll_event& ev);
  void take_commands(bool& stop);
  void run_timers();
  void pause_accepting();
  void resume_accepting();
  void run_again();
  void deliver_answers();
  void close_all();

  // Registration.
  void watch(int fd, std::uint32_t events, std::uint64_t tok, bool add = true);
  void watch_ares(int fd, bool readable, bool writable);
  void add(std::unique_ptr<Jail> jail);
  void remove(std::uint64_t id);
  void set_deadline(Conn& c, Clock::time_point t);
  // Every record goes through here; see max_refusal_records_per_second.
  void audit(Jail& jail, const EgressRecord& r);
  void flush_suppressed(Jail& jail);
  void flush_audit_windows();
  std::size_t suppressing = 0;  // jails with suppressed records

  // Connections.
  void accept_on(Jail& jail, Conn::Kind kind);
  void refuse_over_cap(Jail& jail, UniqueFd fd, Conn::Kind kind);
  Conn& new_conn(Jail& jail, UniqueFd fd, Conn::Kind kind);
  void on_client(Conn& c);
  void on_upstream(Conn& c);
  void on_timeout(Conn& c);
  void close_conn(Conn& c);

  // The HTTP proxy.
  void read_head(Conn& c);
  void decide_head(Conn& c, HeadParse& parse);
  bool frame_plain(Conn& c, const RequestHead& head);
  // allowed: the policy allowed it and the upstream failed (502, 504).
  void refuse(Conn& c, int status, std::string_view body, std::string rule, bool allowed = false);
  void refuse_unallowed(Conn& c, const policy::NetVerdict& verdict);
  void with_addresses(Conn& c, std::span<const Address> addresses);
  void connect_next(Conn& c);
  void finish_connect(Conn& c);
  void connected(Conn& c);
  void pump(Conn& c);
  void linger(Conn& c);

  // The DNS stub.
  void read_udp(Jail& jail);
  std::optional<std::vector<std::uint8_t>> dns_query(Jail& jail, std::span<const std::uint8_t> msg,
                                                     bool udp, Lookup target);
  std::vector<std::uint8_t> dns_answer(Jail& jail, const DnsQuery& q,
                                       const Resolver::Answer& answer);
  std::vector<std::uint8_t> dns_reply(Jail& jail, const DnsQuery& q, Rcode rcode,
                                      std::span<const Address> addresses, std::uint32_t ttl,
                                      bool allowed);
  void dns_read(Conn& c);
  // Both true when the answer is written and `c` reads its next query: the
  // caller reads it, or queues `c` for the next turn (never recursion).
  bool dns_send(Conn& c, const std::vector<std::uint8_t>& message);
  bool dns_write(Conn& c);
  void on_answer(Resolver::Answer& answer);
};

// ---------------------------------------------------------------- the loop

void Relay::Impl::run() {
  // splice(2) to a socket whose peer is gone raises SIGPIPE in this thread
  // (it has no MSG_NOSIGNAL); blocked here, it stays pending and harmless.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

  std::array<epoll_event, kMaxEvents> events;
  for (bool stop = false; !stop;) {
    int n = ::epoll_wait(epoll.get(), events.data(), kMaxEvents, wait_ms());
    now = Clock::now();
    for (int i = 0; i < n; ++i) {
      if (static_cast<Tag>(events[i].data.u64 & 7) == Tag::wake)
        take_commands(stop);
      else
        dispatch(events[i]);
    }
    resolver->process(-1, false, false);
    deliver_answers();
    run_timers();
    flush_audit_windows();
    if (accept_paused_until && *accept_paused_until <= now) resume_accepting();
    run_again();
  }
  close_all();
}

int Relay::Impl::wait_ms() const {
  if (!again.empty()) return 0;
  std::optional<std::chrono::milliseconds> wait = resolver->timeout();
  auto until = [&](Clock::time_point at) {
    auto t = std::chrono::ceil<std::chrono::milliseconds>(at - Clock::now());
    t = std::max(t, std::chrono::milliseconds(0));
    wait = wait ? std::min(*wait, t) : t;
  };
  if (!timers.empty()) until(timers.begin()->first);
  if (accept_paused_until) until(*accept_paused_until);
  for (const auto& [id, jail] : jails)
    if (jail->suppressed) until(jail->audit_window + kAuditWindow);
  return wait ? static_cast<int>(std::min<std::int64_t>(wait->count(), 60'000)) : -1;
}

void Relay::Impl::dispatch(const epoll_event& ev) {
  auto tag = static_cast<Tag>(ev.data.u64 & 7);
  std::uint64_t id = ev.data.u64 >> 3;
  bool readable = ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
  bool writable = ev.events & (EPOLLOUT | EPOLLHUP | EPOLLERR);
  if (tag == Tag::ares) {
    resolver->process(static_cast<int>(id), readable, writable);
    return;
  }
  if (tag == Tag::proxy || tag == Tag::dns_udp || tag == Tag::dns_tcp) {
    auto it = jails.find(id);
    if (it == jails.end()) return;
    if (tag == Tag::dns_udp)
      read_udp(*it->second);
    else
      accept_on(*it->second, tag == Tag::proxy ? Conn::Kind::proxy : Conn::Kind::dns);
    return;
  }
  auto it = conns.find(id);
  if (it == conns.end()) return;  // closed earlier in this batch
  Conn& c = *it->second;
  c.last_active = now;
  Endpoint& e = tag == Tag::client ? c.client : c.upstream;
  e.readable |= readable;
  e.writable |= writable;
  if (tag == Tag::client)
    on_client(c);
  else
    on_upstream(c);
}

void Relay::Impl::take_commands(bool& stop) {
  std::uint64_t count;
  [[maybe_unused]] auto r = ::read(wake.get(), &count, sizeof count);
  std::vector<Command> taken;
  {
    std::lock_guard lock(mutex);
    taken.swap(commands);
    stop = stopping;
  }
  for (auto& cmd : taken) {
    if (cmd.add) {
      add(std::move(cmd.add));
    } else {
      remove(cmd.id);
      if (cmd.done) cmd.done->set_value();
    }
  }
}

void Relay::Impl::run_timers() {
  while (!timers.empty() && timers.begin()->first <= now) {
    std::uint64_t id = timers.begin()->second;
    timers.erase(timers.begin());
    auto it = conns.find(id);
    if (it == conns.end()) continue;
    it->second->deadline = Clock::time_point::max();
    on_timeout(*it->second);
  }
}

// Out of fds: every TCP listener leaves the epoll set for kAcceptPause, so
// the loop sleeps instead of being told of the same pending connection
// again and again. Connections wait in the kernel's backlog meanwhile.
void Relay::Impl::pause_accepting() {
  if (accept_paused_until) return;
  accept_paused_until = now + kAcceptPause;
  for (auto& [id, jail] : jails) {
    for (const UniqueFd* fd : {&jail->listeners.proxy, &jail->listeners.dns_tcp})
      if (*fd) ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, fd->get(), nullptr);
  }
}

void Relay::Impl::resume_accepting() {
  accept_paused_until.reset();
  for (auto& [id, jail] : jails) {
    if (jail->listeners.proxy) watch(jail->listeners.proxy.get(), EPOLLIN, token(Tag::proxy, id));
    if (jail->listeners.dns_tcp)
      watch(jail->listeners.dns_tcp.get(), EPOLLIN, token(Tag::dns_tcp, id));
  }
}

// A jail provokes refusals (and DNS answers) as fast as it can send, and
// each record is written on this thread: past the window's budget they are
// only counted. Allowed connections and failures of allowed ones (502, 504)
// cost an upstream connection each, and are always recorded.
void Relay::Impl::audit(Jail& jail, const EgressRecord& r) {
  if (!options.audit) return;
  if (!r.allowed || r.kind == EgressRecord::Kind::dns) {
    if (now - jail.audit_window >= kAuditWindow) {
      flush_suppressed(jail);
      jail.audit_window = now;
      jail.audit_count = 0;
    }
    if (jail.audit_count >= options.max_refusal_records_per_second) {
      if (jail.suppressed++ == 0) ++suppressing;
      return;
    }
    ++jail.audit_count;
  }
  options.audit(r);
}

void Relay::Impl::flush_suppressed(Jail& jail) {
  if (jail.suppressed == 0) return;
  EgressRecord r;
  r.jail = jail.label;
  r.kind = EgressRecord::Kind::http;
  r.rule = fmt::format("{} more refusals and DNS answers suppressed (over {} a second)",
                       jail.suppressed, options.max_refusal_records_per_second);
  jail.suppressed = 0;
  --suppressing;
  options.audit(r);
}

// A window with suppressed records is summed up once it is over, even if
// the jail has gone quiet.
void Relay::Impl::flush_audit_windows() {
  if (suppressing == 0) return;
  for (auto& [id, jail] : jails)
    if (jail->suppressed && now - jail->audit_window >= kAuditWindow) flush_suppressed(*jail);
}

void Relay::Impl::run_again() {
  std::vector<std::uint64_t> ids;
  ids.swap(again);
  for (std::uint64_t id : ids) {
    auto it = conns.find(id);
    if (it == conns.end()) continue;
    Conn& c = *it->second;
    switch (c.state) {
      case Conn::State::head:
        read_head(c);
        break;
      case Conn::State::relaying:
        pump(c);
        break;
      case Conn::State::answering:
        linger(c);
        break;
      case Conn::State::dns_read:
        dns_read(c);
        break;
      default:
        break;  // waiting for the resolver, a connect, or EPOLLOUT
    }
  }
}

void Relay::Impl::deliver_answers() {
  for (auto answers = resolver->take_answers(); !answers.empty();
       answers = resolver->take_answers()) {
    for (auto& answer : answers) on_answer(answer);
  }
}

void Relay::Impl::close_all() {
  while (!jails.empty()) remove(jails.begin()->first);
  // c-ares's sockets and outstanding lookups go before the epoll set.
  resolver.reset();
  lookups.clear();
}

// ---------------------------------------------------------- registration

void Relay::Impl::watch(int fd, std::uint32_t events, std::uint64_t tok, bool add) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tok;
  ::epoll_ctl(epoll.get(), add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
}

void Relay::Impl::watch_ares(int fd, bool readable, bool writable) {
  if (!readable && !writable) {
    ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, fd, nullptr);
    ares_fds.erase(fd);
    return;
  }
  std::uint32_t events = (readable ? EPOLLIN : 0u) | (writable ? EPOLLOUT : 0u);
  bool fresh = ares_fds.insert(fd).second;
  watch(fd, events, token(Tag::ares, static_cast<std::uint64_t>(fd)), fresh);
}

void Relay::Impl::add(std::unique_ptr<Jail> jail) {
  // Level-triggered listeners: what one turn's budget leaves is reported
  // again on the next.
  auto listen = [&](const UniqueFd& fd, Tag tag) {
    if (!fd) return;
    // Paused (out of fds), resume_accepting() adds the TCP ones.
    if (accept_paused_until && tag != Tag::dns_udp) return;
    set_nonblocking(fd.get());
    watch(fd.get(), EPOLLIN, token(tag, jail->id));
  };
  listen(jail->listeners.proxy, Tag::proxy);
  listen(jail->listeners.dns_udp, Tag::dns_udp);
  listen(jail->listeners.dns_tcp, Tag::dns_tcp);
  jails.emplace(jail->id, std::move(jail));
}

void Relay::Impl::remove(std::uint64_t id) {
  auto it = jails.find(id);
  if (it == jails.end()) return;
  Jail& jail = *it->second;
  // The listeners came from the jail's helper, which may still hold them:
  // closing ours would not take them out of the epoll set.
  for (const UniqueFd* fd :
       {&jail.listeners.proxy, &jail.listeners.dns_udp, &jail.listeners.dns_tcp}) {
    if (*fd) ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, fd->get(), nullptr);
  }
  while (!jail.conns.empty()) close_conn(*conns.at(*jail.conns.begin()));
  flush_suppressed(jail);
  std::erase_if(lookups, [&](const auto& entry) { return entry.second.jail == id; });
  jails.erase(it);
}

void Relay::Impl::set_deadline(Conn& c, Clock::time_point t) {
  if (c.deadline != Clock::time_point::max()) timers.erase({c.deadline, c.id});
  c.deadline = t;
  if (t != Clock::time_point::max()) timers.insert({t, c.id});
}

// ----------------------------------------------------------- connections

void Relay::Impl::accept_on(Jail& jail, Conn::Kind kind) {
  int listener =
      kind == Conn::Kind::proxy ? jail.listeners.proxy.get() : jail.listeners.dns_tcp.get();
  for (int i = 0; i < kBudget; ++i) {
    UniqueFd fd(::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        pause_accepting();
      return;  // EAGAIN: the listener reports the next one
    }
    if (jail.conns.size() >= options.max_connections_per_jail || open >= max_connections) {
      refuse_over_cap(jail, std::move(fd), kind);
      continue;
    }
    Conn& c = new_conn(jail, std::move(fd), kind);
    set_deadline(c, now + options.head_timeout);
  }
}

void Relay::Impl::refuse_over_cap(Jail& jail, UniqueFd fd, Conn::Kind kind) {
  if (kind == Conn::Kind::dns) return;  // closed: a DNS client retries
  bool jail_cap = jail.conns.size() >= options.max_connections_per_jail;
  EgressRecord r;
  r.jail = jail.label;
  r.kind = EgressRecord::Kind::http;
  r.status = 503;
  r.rule = jail_cap ? fmt::format("max_connections_per_jail ({})", options.max_connections_per_jail)
                    : fmt::format("max_connections ({})", max_connections);
  auto body =
      jail_cap ? fmt::format("brig: this jail has {} proxied connections open, the most it may.\n",
                             options.max_connections_per_jail)
               : fmt::format(
                     "brig: brig has {} proxied connections open for all its jails, the "
                     "most it may.\n",
                     max_connections);
  auto answer = error_response(503, body);
  // Best effort: a fresh socket's send buffer takes a short answer whole.
  [[maybe_unused]] auto n = ::send(fd.get(), answer.data(), answer.size(), MSG_NOSIGNAL);
  ::shutdown(fd.get(), SHUT_WR);
  [[maybe_unused]] auto m = ::recv(fd.get(), scratch.data(), scratch.size(), 0);
  audit(jail, r);
}

Conn& Relay::Impl::new_conn(Jail& jail, UniqueFd fd, Conn::Kind kind) {
  auto c = std::make_unique<Conn>();
  c->id = next_conn++;
  c->kind = kind;
  c->state = kind == Conn::Kind::proxy ? Conn::State::head : Conn::State::dns_read;
  c->jail = &jail;
  c->last_active = now;
  c->client.fd = std::move(fd);
  c->record.jail = jail.label;
  watch(c->client.fd.get(), EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, token(Tag::client, c->id));
  jail.conns.insert(c->id);
  ++open;
  return *conns.emplace(c->id, std::move(c)).first->second;
}

void Relay::Impl::on_client(Conn& c) {
  switch (c.state) {
    case Conn::State::head:
      return read_head(c);
    case Conn::State::relaying:
      return pump(c);
    case Conn::State::answering:
      return linger(c);
    case Conn::State::dns_read:
      return dns_read(c);
    case Conn::State::dns_write:
      if (dns_write(c)) again.push_back(c.id);
      return;
    default:
      // resolving, connecting, dns_wait: the event stays recorded in the
      // endpoint's flags until then.
      return;
  }
}

void Relay::Impl::on_upstream(Conn& c) {
  if (c.state == Conn::State::connecting && c.upstream.writable) return finish_connect(c);
  if (c.state == Conn::State::relaying) pump(c);
}

void Relay::Impl::on_timeout(Conn& c) {
  switch (c.state) {
    case Conn::State::head:
      return refuse(c, 408, "brig: the request head did not arrive in time.\n", "head timeout");
    case Conn::State::resolving:
    case Conn::State::connecting: {
      auto body = fmt::format("brig: no connection to {}:{} within {} ms{}{}.\n", c.record.host,
                              c.record.port, options.connect_timeout.count(),
                              c.connect_errors.empty() ? "" : ": ", c.connect_errors);
      return refuse(c, 504, body, c.record.rule, true);
    }
    case Conn::State::relaying:
      if (options.idle_timeout.count() > 0 && c.last_active + options.idle_timeout > now)
        return set_deadline(c, c.last_active + options.idle_timeout);
      return close_conn(c);
    default:
      return close_conn(c);
  }
}

void Relay::Impl::close_conn(Conn& c) {
  if (c.decided && !c.recorded) {
    c.record.bytes_up = c.up.bytes();
    c.record.bytes_down = c.down.bytes();
    if (c.response) c.record.status = c.response->status();
    audit(*c.jail, c.record);
  }
  set_deadline(c, Clock::time_point::max());
  if (c.lookup) lookups.erase(c.lookup);
  c.up.release(pipes);
  c.down.release(pipes);
  c.jail->conns.erase(c.id);
  --open;
  std::uint64_t id = c.id;
  conns.erase(id);  // closes both sockets, which leaves the epoll set
}

// ------------------------------------------------------------- the proxy

void Relay::Impl::read_head(Conn& c) {
  // Bounded by max_head anyway, but a head dribbled in small segments still
  // takes its turn like everything else.
  for (int reads = 0; c.client.readable; ++reads) {
    if (reads == kBudget) {
      again.push_back(c.id);
      return;
    }
    std::size_t room = options.max_head + 1 - std::min(c.in.size(), options.max_head + 1);
    if (room == 0) break;
    std::size_t want = std::min(room, scratch.size());
    ssize_t n = ::recv(c.client.fd.get(), scratch.data(), want, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c.client.readable = false;
        break;
      }
      return close_conn(c);
    }
    if (n == 0) return close_conn(c);  // gone before asking anything
    std::size_t before = c.in.size();
    c.in.append(scratch.data(), static_cast<std::size_t>(n));
    if (!may_end_head(c.in, before)) continue;
    HeadParse parse = parse_request_head(c.in, options.max_head);
    if (parse.status != HeadParse::Status::incomplete) return decide_head(c, parse);
  }
  if (c.in.size() > options.max_head) {
    HeadParse parse = parse_request_head(c.in, options.max_head);
    decide_head(c, parse);
  }
}

void Relay::Impl::decide_head(Conn& c, HeadParse& parse) {
  switch (parse.status) {
    case HeadParse::Status::complete:
      break;
    case HeadParse::Status::too_large:
      return refuse(c, 431, fmt::format("brig: {}\n", parse.why), "head too large");
    case HeadParse::Status::incomplete:
      return refuse(c, 431,
                    fmt::format("brig: no end of the head within {} bytes\n", options.max_head),
                    "head too large");
    default:
      return refuse(c, 400, fmt::format("brig: {}\n", parse.why), "bad request");
  }
  const RequestHead& head = parse.head;
  bool tunnel = head.method == "CONNECT";
  c.record.kind = tunnel ? EgressRecord::Kind::connect : EgressRecord::Kind::http;
  c.record.host = head.host;
  c.record.port = head.port;
  if (!tunnel && !frame_plain(c, head)) return;
  auto verdict = policy::decide(c.jail->rules, head.host, head.port);
  if (!verdict.allowed) return refuse_unallowed(c, verdict);
  c.decided = true;
  c.record.allowed = true;
  c.record.rule = verdict.rule ? verdict.rule->text : "";
  if (tunnel) c.up.queue(std::string_view(c.in).substr(head.size), true);
  std::string().swap(c.in);
  set_deadline(c, now + options.connect_timeout);
  if (auto literal = policy::parse_address(head.host)) return with_addresses(c, {&*literal, 1});
  auto statics = policy::fixed_addresses(c.jail->rules, head.host);
  if (!statics.empty()) return with_addresses(c, statics);
  c.state = Conn::State::resolving;
  c.lookup = next_lookup++;
  lookups[c.lookup] = Lookup{c.jail->id, c.id, {}, {}, 0};
  resolver->lookup(c.lookup, c.record.host, AF_UNSPEC);
}

// A plain request: its head goes upstream rewritten, then its body up to
// where http-parser says the request ends; what follows is dropped.
bool Relay::Impl::frame_plain(Conn& c, const RequestHead& head) {
  c.request = std::make_unique<MessageFilter>(MessageFilter::Kind::request);
  c.response =
      std::make_unique<MessageFilter>(MessageFilter::Kind::response, head.method == "HEAD");
  std::size_t end = c.request->pass(c.in);
  if (c.request->failed()) {
    refuse(c, 400, fmt::format("brig: {}\n", c.request->why()), "bad request");
    return false;
  }
  c.up.queue(upstream_head(head), true);
  if (end > head.size) c.up.queue(std::string_view(c.in).substr(head.size, end - head.size), true);
  c.up.set_filter(c.request.get());
  c.down.set_filter(c.response.get());
  return true;
}

void Relay::Impl::refuse(Conn& c, int status, std::string_view body, std::string rule,
                         bool allowed) {
  c.record.allowed = allowed;
  c.record.status = status;
  c.record.rule = std::move(rule);
  c.decided = false;
  c.recorded = true;
  audit(*c.jail, c.record);
  if (c.lookup) lookups.erase(std::exchange(c.lookup, 0));
  c.upstream = Endpoint{};
  c.up = Flow{};
  c.down = Flow{};
  c.down.queue(error_response(status, body), false);
  c.state = Conn::State::answering;
  set_deadline(c, now + std::min<std::chrono::milliseconds>(kLinger, options.head_timeout));
  linger(c);
}

void Relay::Impl::refuse_unallowed(Conn& c, const policy::NetVerdict& verdict) {
  const auto& host = c.record.host;
  auto port = c.record.port;
  if (verdict.rule) {
    auto body = fmt::format("brig: {}:{} is refused by the policy's deny rule `{}`.\n", host, port,
                            verdict.rule->text);
    return refuse(c, 403, body, verdict.rule->text);
  }
  auto hint = policy::allow_hint(host, port);
  auto body = fmt::format(
      "brig: {}:{} is not allowed: no allow rule of the policy names it.\n"
      "To allow it, add to the policy's [network] section:\n  {}\n",
      host, port, hint);
  refuse(c, 403, body, fmt::format("no allow rule; would allow: {}", hint));
}

void Relay::Impl::with_addresses(Conn& c, std::span<const Address> addresses) {
  const auto& rules = c.jail->rules;
  c.candidates.clear();
  std::string refused;
  for (const auto& a : addresses) {
    if (policy::address_permitted(rules, c.record.host, a, c.record.port))
      c.candidates.push_back(a);
    else
      refused += fmt::format("{}{} ({})", refused.empty() ? "" : ", ", policy::address_text(a),
                             address_kind(a));
  }
  if (c.candidates.empty()) {
    auto body = fmt::format(
        "brig: {}:{} resolves to {}, which the policy does not name: refused, as DNS "
        "rebinding would be.\nIf it is meant, name the address in the policy's [network] "
        "section, e.g. hosts = {{ \"{}\" = \"{}\" }}.\n",
        c.record.host, c.record.port, refused, c.record.host,
        policy::address_text(addresses.front()));
    return refuse(c, 403, body, fmt::format("resolves to {}", refused));
  }
  c.next = 0;
  connect_next(c);
}

void Relay::Impl::connect_next(Conn& c) {
  c.upstream = Endpoint{};
  while (c.next < c.candidates.size()) {
    const Address& a = c.candidates[c.next++];
    auto sa = socket_address(a, c.record.port);
    UniqueFd fd(::socket(a.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    int err = errno;
    if (fd &&
        (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa->first), sa->second) == 0 ||
         errno == EINPROGRESS)) {
      c.upstream.fd = std::move(fd);
      c.state = Conn::State::connecting;
      watch(c.upstream.fd.get(), EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
            token(Tag::upstream, c.id));
      return;  // the first EPOLLOUT says how it went
    }
    if (fd) err = errno;
    c.connect_errors += fmt::format("{}{}: {}", c.connect_errors.empty() ? "" : "; ",
                                    policy::address_text(a), std::strerror(err));
  }
  auto body = fmt::format("brig: cannot connect to {}:{}: {}.\n", c.record.host, c.record.port,
                          c.connect_errors);
  refuse(c, 502, body, c.record.rule, true);
}

void Relay::Impl::finish_connect(Conn& c) {
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(c.upstream.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err == 0) return connected(c);
  const Address& a = c.candidates[c.next - 1];
  c.connect_errors += fmt::format("{}{}: {}", c.connect_errors.empty() ? "" : "; ",
                                  policy::address_text(a), std::strerror(err));
  connect_next(c);
}

void Relay::Impl::connected(Conn& c) {
  const Address used = c.candidates[c.next - 1];
  // One of this host's own addresses (its public one, which a name under an
  // allowed wildcard can resolve to) reaches the host's own services, as
  // loopback would: the kernel routes it locally, and the connection's two
  // ends then have one address. Refused unless the policy named it.
  if (to_this_host(c.upstream.fd.get()) &&
      !policy::address_named(c.jail->rules, c.record.host, used, c.record.port)) {
    const std::string text = policy::address_text(used);
    auto body = fmt::format(
        "brig: {}:{} resolves to {}, an address of brig's own host: refused, as loopback "
        "is.\nIf it is meant, name the address in the policy's [network] section.\n",
        c.record.host, c.record.port, text);
    return refuse(c, 403, body, fmt::format("resolves to {} (this host)", text));
  }
  c.record.address = policy::address_text(used);
  std::vector<Address>().swap(c.candidates);
  std::string().swap(c.connect_errors);
  c.state = Conn::State::relaying;
  if (c.record.kind == EgressRecord::Kind::connect) {
    c.record.status = 200;
    c.down.queue(kEstablished, false);
    c.up.set_splice(true);
    c.down.set_splice(true);
  }
  set_deadline(
      c, options.idle_timeout.count() > 0 ? now + options.idle_timeout : Clock::time_point::max());
  pump(c);
}

void Relay::Impl::pump(Conn& c) {
  auto up = c.up.pump(c.client, c.upstream, pipes, scratch, kBudget);
  auto down =
      up == Flow::Step::error ? up : c.down.pump(c.upstream, c.client, pipes, scratch, kBudget);
  if (up == Flow::Step::error || down == Flow::Step::error) return close_conn(c);
  // Plain HTTP ends with its response; a tunnel when both ways have ended.
  bool over = c.response ? c.down.finished() : (c.up.finished() && c.down.finished());
  if (over) return close_conn(c);
  if (up == Flow::Step::again || down == Flow::Step::again) again.push_back(c.id);
}

void Relay::Impl::linger(Conn& c) {
  if (!c.answered) {
    Endpoint none;
    if (c.down.pump(none, c.client, pipes, scratch, kBudget) == Flow::Step::error)
      return close_conn(c);
    if (!c.down.drained()) return;
    ::shutdown(c.client.fd.get(), SHUT_WR);
    c.answered = true;
  }
  for (int i = 0; i < kBudget && c.client.readable; ++i) {
    ssize_t n = ::recv(c.client.fd.get(), scratch.data(), scratch.size(), 0);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      c.client.readable = false;
      return;
    }
    return close_conn(c);  // EOF or an error: the client has what it needs
  }
  if (c.client.readable) again.push_back(c.id);
}

// --------------------------------------------------------- the DNS stub

void Relay::Impl::read_udp(Jail& jail) {
  for (int i = 0; i < kBudget; ++i) {
    Lookup target{jail.id, 0, {}, {}, sizeof(sockaddr_storage)};
    auto* buf = reinterpret_cast<std::uint8_t*>(scratch.data());
    ssize_t n = ::recvfrom(jail.listeners.dns_udp.get(), buf, scratch.size(), 0,
                           reinterpret_cast<sockaddr*>(&target.peer), &target.peer_len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    std::span<const std::uint8_t> msg(buf, static_cast<std::size_t>(n));
    auto peer = target.peer;
    auto peer_len = target.peer_len;
    auto reply = dns_query(jail, msg, true, std::move(target));
    if (reply && !reply->empty()) {
      ::sendto(jail.listeners.dns_udp.get(), reply->data(), reply->size(), MSG_DONTWAIT,
               reinterpret_cast<const sockaddr*>(&peer), peer_len);
    }
  }
}

std::optional<std::vector<std::uint8_t>> Relay::Impl::dns_query(Jail& jail,
                                                                std::span<const std::uint8_t> msg,
                                                                bool udp, Lookup target) {
  // Classic DNS over UDP stops at 512 bytes; only EDNS (an additional
  // record) may say more.
  bool too_large =
      udp && msg.size() > kUdpDnsLimit && (msg.size() < 12 || (msg[10] | msg[11]) == 0);
  auto query = too_large ? Result<DnsQuery>(std::unexpected(Error{"parse", "", "over 512 bytes"}))
                         : parse_dns_query(msg);
  if (!query) {
    EgressRecord r;
    r.jail = jail.label;
    r.kind = EgressRecord::Kind::dns;
    r.status = static_cast<int>(Rcode::formerr);
    r.rule = "malformed query: " + query.error().why;
    audit(jail, r);
    // Too short to carry an id: nothing to answer (an empty reply: drop).
    return dns_error(msg, Rcode::formerr).value_or(std::vector<std::uint8_t>{});
  }
  const auto& rules = jail.rules;
  if (!policy::name_allowed(rules, query->name))
    return dns_reply(jail, *query, Rcode::refused, {}, 0, false);
  bool address_type = query->type == kTypeA || query->type == kTypeAAAA;
  if (query->klass != kClassIN || !address_type)
    return dns_reply(jail, *query, Rcode::noerror, {}, 0, true);
  auto statics = policy::fixed_addresses(rules, query->name);
  if (!statics.empty()) {
    auto kept = dns_permitted(rules, query->name, statics);
    return dns_reply(jail, *query, Rcode::noerror, kept, kStaticTtl, true);
  }
  if (udp && jail.dns_pending >= options.max_dns_pending_per_jail)
    return std::vector<std::uint8_t>{};  // dropped: the client retries
  if (udp) ++jail.dns_pending;
  std::uint64_t id = next_lookup++;
  target.query = *query;
  lookups[id] = std::move(target);
  if (!udp) conns.at(lookups[id].conn)->lookup = id;
  resolver->lookup(id, query->name, query->type == kTypeA ? AF_INET : AF_INET6);
  return std::nullopt;
}

std::vector<std::uint8_t> Relay::Impl::dns_answer(Jail& jail, const DnsQuery& q,
                                                  const Resolver::Answer& answer) {
  switch (answer.status) {
    case Resolver::Status::ok: {
      auto kept = dns_permitted(jail.rules, q.name, answer.addresses);
      return dns_reply(jail, q, Rcode::noerror, kept, answer.ttl, true);
    }
    case Resolver::Status::no_data:
      return dns_reply(jail, q, Rcode::noerror, {}, 0, true);
    case Resolver::Status::nxdomain:
      return dns_reply(jail, q, Rcode::nxdomain, {}, 0, true);
    default:
      return dns_reply(jail, q, Rcode::servfail, {}, 0, true);
  }
}

std::vector<std::uint8_t> Relay::Impl::dns_reply(Jail& jail, const DnsQuery& q, Rcode rcode,
                                                 std::span<const Address> addresses,
                                                 std::uint32_t ttl, bool allowed) {
  EgressRecord r;
  r.jail = jail.label;
  r.kind = EgressRecord::Kind::dns;
  r.host = q.name;
  r.allowed = allowed;
  r.rule = dns_rule_text(jail.rules, q.name);
  r.status = static_cast<int>(rcode);
  r.address = join_addresses(addresses);
  audit(jail, r);
  return dns_response(q, rcode, addresses, ttl);
}

void Relay::Impl::on_answer(Resolver::Answer& answer) {
  auto it = lookups.find(answer.id);
  if (it == lookups.end()) return;  // its asker is gone
  Lookup target = std::move(it->second);
  lookups.erase(it);
  auto jail = jails.find(target.jail);
  if (jail == jails.end()) return;
  if (target.conn == 0) {
    --jail->second->dns_pending;
    auto reply = dns_answer(*jail->second, target.query, answer);
    ::sendto(jail->second->listeners.dns_udp.get(), reply.data(), reply.size(), MSG_DONTWAIT,
             reinterpret_cast<const sockaddr*>(&target.peer), target.peer_len);
    return;
  }
  auto conn = conns.find(target.conn);
  if (conn == conns.end()) return;
  Conn& c = *conn->second;
  c.lookup = 0;
  if (c.kind == Conn::Kind::dns) {
    if (dns_send(c, dns_answer(*jail->second, target.query, answer))) again.push_back(c.id);
    return;
  }
  if (answer.status != Resolver::Status::ok) {
    auto why = answer.status == Resolver::Status::failed ? "the name servers did not answer"
                                                         : "the name has no address";
    auto body = fmt::format("brig: cannot resolve {}: {}.\n", c.record.host, why);
    return refuse(c, 502, body, c.record.rule, true);
  }
  with_addresses(c, answer.addresses);
}

void Relay::Impl::dns_read(Conn& c) {
  // A turn is a few reads (about kBudget messages, each a length and a
  // body): a connection streaming queries gets the next turn after the
  // others, and its answers are written from here, never by recursing.
  for (int step = 0; c.client.readable && c.state == Conn::State::dns_read; ++step) {
    if (step == 3 * kBudget) {
      again.push_back(c.id);
      return;
    }
    std::size_t need = 2;
    if (c.in.size() >= 2) {
      std::size_t length =
          static_cast<std::uint8_t>(c.in[0]) << 8 | static_cast<std::uint8_t>(c.in[1]);
      if (length == 0) return close_conn(c);
      need += length;
    }
    if (c.in.size() == need) {
      std::vector<std::uint8_t> msg(c.in.begin() + 2, c.in.end());
      std::string().swap(c.in);
      c.state = Conn::State::dns_wait;
      auto reply = dns_query(*c.jail, msg, false, Lookup{c.jail->id, c.id, {}, {}, 0});
      if (!reply) return;  // the resolver answers later
      if (reply->empty()) return close_conn(c);
      if (!dns_send(c, *reply)) return;  // closed, or the answer waits for EPOLLOUT
      continue;
    }
    // Never past this message: one message at most is buffered.
    ssize_t n = ::recv(c.client.fd.get(), scratch.data(), need - c.in.size(), 0);
    if (n > 0) {
      c.in.append(scratch.data(), static_cast<std::size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      c.client.readable = false;
    } else if (n == 0 || errno != EINTR) {
      return close_conn(c);
    }
  }
}

bool Relay::Impl::dns_send(Conn& c, const std::vector<std::uint8_t>& message) {
  std::string framed;
  framed.push_back(static_cast<char>(message.size() >> 8));
  framed.push_back(static_cast<char>(message.size() & 0xff));
  framed.append(message.begin(), message.end());
  c.down.queue(framed, false);
  c.state = Conn::State::dns_write;
  return dns_write(c);
}

bool Relay::Impl::dns_write(Conn& c) {
  Endpoint none;
  if (c.down.pump(none, c.client, pipes, scratch, kBudget) == Flow::Step::error) {
    close_conn(c);
    return false;
  }
  if (!c.down.drained()) return false;
  c.state = Conn::State::dns_read;
  set_deadline(c, now + options.head_timeout);
  return true;
}

// ------------------------------------------------------------ the Relay

Relay::Relay(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Relay>> Relay::start(RelayOptions options) {
  // Every connection costs fds, so the relay wants all the process may
  // have; the soft limit is often 1024 while the hard one is far higher.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    rlimit raised = files;
    raised.rlim_cur = files.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) files = raised;
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->max_connections = impl->options.max_connections;
  if (impl->max_connections == 0) {
    std::size_t soft = files.rlim_cur == RLIM_INFINITY ? std::size_t{1} << 20
                                                       : static_cast<std::size_t>(files.rlim_cur);
    impl->max_connections = soft > 2 * kFdHeadroom ? (soft - kFdHeadroom) / 4 : soft / 8 + 1;
  }
  impl->epoll.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!impl->epoll) return std::unexpected(sys_error("start the egress relay", "epoll", errno));
  impl->wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!impl->wake) return std::unexpected(sys_error("start the egress relay", "eventfd", errno));
  impl->watch(impl->wake.get(), EPOLLIN, token(Tag::wake, 0));
  Impl* raw = impl.get();
  auto resolver = Resolver::create(impl->options.resolvers,
                                   [raw](int fd, bool r, bool w) { raw->watch_ares(fd, r, w); });
  if (!resolver) return std::unexpected(std::move(resolver.error()));
  impl->resolver = std::move(*resolver);
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<Relay>(new Relay(std::move(impl)));
}

Relay::~Relay() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(impl_->wake.get(), &one, sizeof one);
  impl_->thread.join();
}

std::uint64_t Relay::add_jail(std::string jail, policy::NetRules rules, JailListeners listeners) {
  auto j = std::make_unique<Jail>();
  j->id = impl_->next_jail++;
  j->label = std::move(jail);
  j->rules = std::move(rules);
  j->listeners = std::move(listeners);
  std::uint64_t id = j->id;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->commands.push_back(Impl::Command{id, std::move(j), nullptr});
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(impl_->wake.get(), &one, sizeof one);
  return id;
}

void Relay::remove_jail(std::uint64_t id) {
  bool on_loop = std::this_thread::get_id() == impl_->thread.get_id();
  std::promise<void> done;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->commands.push_back(Impl::Command{id, nullptr, on_loop ? nullptr : &done});
  }
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(impl_->wake.get(), &one, sizeof one);
  if (!on_loop) done.get_future().wait();
}

std::size_t Relay::connections() const {
  return impl_->open.load();
}

}  // namespace brig::egress
