#include "server/egress/pins.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <map>

#include "jail/netfilter/availability.h"
#include "server/egress/resolver.h"
#include "server/policy/net_filter.h"

namespace brig::egress {
namespace {

const char* status_text(Resolver::Status s) {
  switch (s) {
    case Resolver::Status::ok:
      return "resolved";
    case Resolver::Status::no_data:
      return "has no IPv4 address";
    case Resolver::Status::nxdomain:
      return "does not exist";
    case Resolver::Status::failed:
      break;
  }
  return "the name servers failed or did not answer";
}

}  // namespace

Result<Pins> resolve_pins(const std::vector<std::string>& names,
                          const std::vector<std::string>& servers,
                          std::chrono::milliseconds timeout) {
  Pins pins;
  if (names.empty()) return pins;
  // c-ares's sockets and what it waits for on each.
  std::map<int, short> watched;
  auto resolver = BRIG_TRY(Resolver::create(servers, [&watched](int fd, bool r, bool w) {
    if (!r && !w) {
      watched.erase(fd);
      return;
    }
    watched[fd] = static_cast<short>((r ? POLLIN : 0) | (w ? POLLOUT : 0));
  }));
  for (std::uint64_t i = 0; i < names.size(); ++i) resolver->lookup(i, names[i], AF_INET);
  std::vector<bool> answered(names.size(), false);
  std::size_t left = names.size();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto collect = [&] {
    for (Resolver::Answer& a : resolver->take_answers()) {
      if (a.id >= names.size() || answered[a.id]) continue;
      answered[a.id] = true;
      --left;
      const std::string& name = names[a.id];
      if (a.status != Resolver::Status::ok) {
        pins.unresolved.push_back(name + ": " + status_text(a.status));
        continue;
      }
      for (const policy::Address& address : a.addresses)
        pins.resolved.push_back(policy::StaticHost{name, address});
    }
  };
  collect();
  while (left > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (auto t = resolver->timeout()) wait = std::min(wait, *t);
    std::vector<pollfd> fds;
    for (auto [fd, events] : watched) fds.push_back(pollfd{fd, events, 0});
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(wait.count()) + 1);
    if (n < 0 && errno != EINTR) return std::unexpected(sys_error("poll", "the resolver", errno));
    bool any = false;
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      any = true;
      resolver->process(p.fd, (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0,
                        (p.revents & POLLOUT) != 0);
    }
    if (!any) resolver->process(-1, false, false);
    collect();
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    if (!answered[i]) pins.unresolved.push_back(names[i] + ": no answer in time");
  return pins;
}

Result<std::vector<std::string>> prepare_filtered(policy::NetRules& rules) {
  if (auto why = jail::netfilter::filtered_unavailable())
    return std::unexpected(Error{"plan the jail", "network.mode = \"filtered\"", *why});
  const Pins pins =
      BRIG_TRY(resolve_pins(policy::names_to_pin(rules), {}, std::chrono::seconds(5)));
  rules = policy::with_pins(std::move(rules), pins.resolved);
  std::vector<std::string> warnings;
  for (const std::string& u : pins.unresolved)
    warnings.push_back("network: " + u + "; only the proxy can reach it from the jail");
  return warnings;
}

}  // namespace brig::egress
