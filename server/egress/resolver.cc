#include "server/egress/resolver.h"

#include <ares.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace brig::egress {

namespace {

// c-ares's own retry schedule: a name server gets 2 s, then 4 s, and a
// lookup gives up after about 6 s; the relay's connect_timeout may answer
// the jail sooner, and the late answer is then ignored.
constexpr int kTimeoutMs = 2000;
constexpr int kTries = 2;
// A name's records live this long at most in the jail's own caches.
constexpr std::uint32_t kMaxTtl = 300;

Resolver::Status status_of(int ares_status) {
  switch (ares_status) {
    case ARES_SUCCESS:
      return Resolver::Status::ok;
    case ARES_ENODATA:
      return Resolver::Status::no_data;
    case ARES_ENOTFOUND:
    case ARES_ENONAME:
      return Resolver::Status::nxdomain;
    default:
      return Resolver::Status::failed;
  }
}

std::optional<policy::Address> address_of(const sockaddr* sa) {
  policy::Address a;
  if (sa->sa_family == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, sa, sizeof in);
    std::memcpy(a.bytes.data(), &in.sin_addr, 4);
    return a;
  }
  if (sa->sa_family == AF_INET6) {
    sockaddr_in6 in6;
    std::memcpy(&in6, sa, sizeof in6);
    a.v6 = true;
    std::memcpy(a.bytes.data(), &in6.sin6_addr, 16);
    return a;
  }
  return std::nullopt;
}

}  // namespace

struct Resolver::Impl {
  ares_channel channel = nullptr;
  Watch watch;
  std::vector<Answer> answers;

  struct Pending {
    Impl* impl;
    std::uint64_t id;
  };

  static void on_socket(void* data, ares_socket_t fd, int readable, int writable) {
    static_cast<Impl*>(data)->watch(fd, readable != 0, writable != 0);
  }

  static void on_answer(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
    std::unique_ptr<Pending> pending(static_cast<Pending*>(arg));
    Answer answer{pending->id, status_of(status), {}, kMaxTtl};
    if (result) {
      for (auto* node = result->nodes; node; node = node->ai_next) {
        auto a = address_of(node->ai_addr);
        if (!a || std::find(answer.addresses.begin(), answer.addresses.end(), *a) !=
                      answer.addresses.end())
          continue;
        answer.addresses.push_back(*a);
        answer.ttl = std::min(answer.ttl, static_cast<std::uint32_t>(std::max(node->ai_ttl, 0)));
      }
      ares_freeaddrinfo(result);
    }
    if (answer.status == Status::ok && answer.addresses.empty()) answer.status = Status::no_data;
    pending->impl->answers.push_back(std::move(answer));
  }

  ~Impl() {
    // Runs every outstanding callback (ARES_EDESTRUCTION), freeing its Pending.
    if (channel) ares_destroy(channel);
  }
};

Resolver::Resolver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Resolver::~Resolver() = default;

Result<std::unique_ptr<Resolver>> Resolver::create(const std::vector<std::string>& servers,
                                                   Watch watch) {
  static std::once_flag once;
  static int init_status = ARES_SUCCESS;
  std::call_once(once, [] { init_status = ares_library_init(ARES_LIB_INIT_ALL); });
  if (init_status != ARES_SUCCESS)
    return std::unexpected(Error{"start the resolver", "", ares_strerror(init_status)});

  auto impl = std::make_unique<Impl>();
  impl->watch = std::move(watch);
  ares_options options{};
  // No search domains: the jail names hosts fully, and a name must not
  // resolve differently because of the host's `search` line. No
  // HOSTALIASES either: the server's environment is not policy.
  options.flags = ARES_FLAG_NOALIASES;
  options.ndomains = 0;
  options.domains = nullptr;
  options.timeout = kTimeoutMs;
  options.tries = kTries;
  options.sock_state_cb = &Impl::on_socket;
  options.sock_state_cb_data = impl.get();
  int mask = ARES_OPT_FLAGS | ARES_OPT_DOMAINS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
             ARES_OPT_SOCK_STATE_CB;
  if (int rc = ares_init_options(&impl->channel, &options, mask); rc != ARES_SUCCESS)
    return std::unexpected(Error{"start the resolver", "", ares_strerror(rc)});
  if (!servers.empty()) {
    std::string csv;
    for (const auto& s : servers) csv += (csv.empty() ? "" : ",") + s;
    if (int rc = ares_set_servers_ports_csv(impl->channel, csv.c_str()); rc != ARES_SUCCESS)
      return std::unexpected(Error{"set the resolvers", csv, ares_strerror(rc)});
  }
  return std::unique_ptr<Resolver>(new Resolver(std::move(impl)));
}

void Resolver::lookup(std::uint64_t id, const std::string& name, int family) {
  ares_addrinfo_hints hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  auto* pending = new Impl::Pending{impl_.get(), id};
  ares_getaddrinfo(impl_->channel, name.c_str(), nullptr, &hints, &Impl::on_answer, pending);
}

void Resolver::process(int fd, bool readable, bool writable) {
  ares_process_fd(impl_->channel, readable ? fd : ARES_SOCKET_BAD, writable ? fd : ARES_SOCKET_BAD);
}

std::optional<std::chrono::milliseconds> Resolver::timeout() const {
  timeval tv{};
  if (!ares_timeout(impl_->channel, nullptr, &tv)) return std::nullopt;
  // Rounded up, so the loop never wakes just before the deadline.
  return std::chrono::milliseconds(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
}

std::vector<Resolver::Answer> Resolver::take_answers() {
  return std::exchange(impl_->answers, {});
}

}  // namespace brig::egress
