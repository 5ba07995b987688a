#include <fmt/format.h>

#include "server/egress/relay.h"

namespace brig::egress {
namespace {

std::string bytes_text(std::uint64_t n) {
  if (n < 10 * 1024) return fmt::format("{} B", n);
  if (n < 10 * 1024 * 1024) return fmt::format("{} KiB", n / 1024);
  return fmt::format("{} MiB", n / (1024 * 1024));
}

}  // namespace

JailListeners jail_listeners(std::vector<UniqueFd> fds) {
  JailListeners l;
  UniqueFd* slots[] = {&l.proxy, &l.dns_udp, &l.dns_tcp};
  for (std::size_t i = 0; i < fds.size() && i < std::size(slots); ++i)
    *slots[i] = std::move(fds[i]);
  return l;
}

std::string describe(const EgressRecord& r) {
  const char* verdict = r.allowed ? "allowed" : "refused";
  if (r.kind == EgressRecord::Kind::dns) {
    return fmt::format("{} DNS {}: {}{}", verdict, r.host, r.rule,
                       r.address.empty() ? "" : " -> " + r.address);
  }
  const char* what = r.kind == EgressRecord::Kind::connect ? "CONNECT" : "HTTP";
  std::string text = fmt::format("{} {} {}:{}", verdict, what, r.host, r.port);
  if (!r.rule.empty()) text += fmt::format(" ({})", r.rule);
  if (!r.address.empty()) text += " via " + r.address;
  text += fmt::format(": {}", r.status);
  if (r.allowed)
    text += fmt::format(", {} up, {} down", bytes_text(r.bytes_up), bytes_text(r.bytes_down));
  return text;
}

}  // namespace brig::egress
