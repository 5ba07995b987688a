#include <string_view>

#include <fmt/format.h>

#include "server/egress/relay.h"

namespace brig::egress {
namespace {

std::string bytes_text(std::uint64_t n) {
  if (n < 10 * 1024) return fmt::format("{} B", n);
  if (n < 10 * 1024 * 1024) return fmt::format("{} KiB", n / 1024);
  return fmt::format("{} MiB", n / (1024 * 1024));
}

// What a jail named goes to terminals and log files: a DNS label may carry
// newlines and escape sequences. Everything outside printable ASCII, and
// the backslash that would make \xNN ambiguous, is written as \xNN.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto b = static_cast<unsigned char>(ch);
    if (b < 0x20 || b >= 0x7f || b == '\\')
      out += fmt::format("\\x{:02x}", b);
    else
      out += ch;
  }
  return out;
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
  auto host = printable(r.host);
  auto rule = printable(r.rule);
  auto address = printable(r.address);
  if (r.kind == EgressRecord::Kind::dns) {
    return fmt::format("{} DNS {}: {}{}", verdict, host, rule,
                       address.empty() ? "" : " -> " + address);
  }
  // The relay's summary of the refusals it did not record one by one.
  if (host.empty() && r.status == 0) return fmt::format("{}: {}", verdict, rule);
  const char* what = r.kind == EgressRecord::Kind::connect ? "CONNECT" : "HTTP";
  std::string text = fmt::format("{} {} {}:{}", verdict, what, host, r.port);
  if (!rule.empty()) text += fmt::format(" ({})", rule);
  if (!address.empty()) text += " via " + address;
  text += fmt::format(": {}", r.status);
  if (r.allowed)
    text += fmt::format(", {} up, {} down", bytes_text(r.bytes_up), bytes_text(r.bytes_down));
  return text;
}

}  // namespace brig::egress
