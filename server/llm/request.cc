#include "server/llm/request.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "jail/base/ascii.h"

namespace brig::llm {
namespace {

std::vector<std::string_view> connection_options(const std::vector<egress::HttpHeader>& headers) {
  std::vector<std::string_view> options;
  for (const egress::HttpHeader& h : headers) {
    if (!ascii_iequals(h.name, "connection")) continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view option = egress::trimmed(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (!option.empty()) options.push_back(option);
    }
  }
  return options;
}

bool dropped_upstream(std::string_view name, const Route& route) {
  static constexpr std::string_view kDropped[] = {"connection",
                                                  "proxy-connection",
                                                  "proxy-authorization",
                                                  "keep-alive",
                                                  "te",
                                                  "trailer",
                                                  "upgrade",
                                                  "host",
                                                  "x-api-key",
                                                  "authorization",
                                                  "accept-encoding",
                                                  "expect"};
  return ascii_iequals(name, route.policy.header) ||
         std::any_of(std::begin(kDropped), std::end(kDropped),
                     [&](std::string_view n) { return ascii_iequals(n, name); });
}

}  // namespace

std::optional<Routed> route_request(std::span<const Route> routes, std::string_view path) {
  if (!path.starts_with('/')) return std::nullopt;
  std::string_view rest = path.substr(1);
  const std::size_t end = rest.find_first_of("/?");
  const std::string_view prefix = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    if (routes[i].policy.prefix != prefix) continue;
    const std::string& base = routes[i].target.path;
    std::string upstream = rest.empty() || rest.starts_with('?')
                               ? (base.empty() ? "/" : base) + std::string(rest)
                               : base + std::string(rest);
    return Routed{i, std::move(upstream)};
  }
  return std::nullopt;
}

Presented presented_keys(const egress::RequestHead& head, const Route& route) {
  Presented p;
  for (const egress::HttpHeader& h : head.headers) {
    if (ascii_iequals(h.name, "authorization")) {
      const std::string_view v = h.value;
      if (v.size() > 7 && ascii_iequals(v.substr(0, 7), "bearer "))
        p.keys.push_back(egress::trimmed(v.substr(7)));
      else
        p.malformed.push_back(fmt::format("Authorization is not \"Bearer <key>\""));
    } else if (ascii_iequals(h.name, "x-api-key") || ascii_iequals(h.name, route.policy.header)) {
      p.keys.push_back(h.value);
    }
  }
  return p;
}

std::string upstream_request_head(const egress::RequestHead& head, const Route& route,
                                  std::string_view upstream_path, std::string_view key) {
  const std::vector<std::string_view> listed = connection_options(head.headers);
  std::string out;
  out += fmt::format("{} {} HTTP/1.{}\r\nHost: {}\r\n", head.method, upstream_path,
                     head.version_minor, policy::llm_host_header(route.target));
  for (const egress::HttpHeader& h : head.headers) {
    if (dropped_upstream(h.name, route)) continue;
    if (std::any_of(listed.begin(), listed.end(),
                    [&](std::string_view o) { return ascii_iequals(o, h.name); }))
      continue;
    out += fmt::format("{}: {}\r\n", h.name, h.value);
  }
  // Room for the rest first: a reallocation after the key is in would
  // leave a copy of it in freed memory that the caller's wipe cannot reach.
  out.reserve(out.size() + route.policy.header.size() + key.size() + 32);
  if (route.policy.header == "bearer") {
    out += "Authorization: Bearer ";
  } else {
    out += route.policy.header;
    out += ": ";
  }
  out += key;
  out += "\r\n\r\n";
  return out;
}

bool expects_continue(const egress::RequestHead& head) {
  return std::any_of(head.headers.begin(), head.headers.end(), [](const egress::HttpHeader& h) {
    return ascii_iequals(h.name, "expect") && ascii_iequals(h.value, "100-continue");
  });
}

bool client_keeps_alive(const egress::RequestHead& head) {
  if (head.version_minor == 0) return false;
  for (std::string_view o : connection_options(head.headers))
    if (ascii_iequals(o, "close")) return false;
  return true;
}

std::optional<ResponseHead> parse_response_head(std::string_view bytes, std::size_t max_size,
                                                bool& bad) {
  bad = false;
  const std::size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos || end + 4 > max_size) {
    if (bytes.size() >= max_size) bad = true;
    return std::nullopt;
  }
  ResponseHead r;
  r.size = end + 4;
  std::string_view head = bytes.substr(0, end);
  const std::size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  // "HTTP/1.1 200 OK"
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || line[8] != ' ' ||
      (line[7] != '0' && line[7] != '1')) {
    bad = true;
    return std::nullopt;
  }
  r.version_minor = line[7] - '0';
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, r.status);
  if (ec != std::errc() || p != line.data() + 12 || r.status < 100) {
    bad = true;
    return std::nullopt;
  }
  r.close = r.version_minor == 0;
  std::string_view rest = line_end == std::string_view::npos ? "" : head.substr(line_end + 2);
  while (!rest.empty()) {
    const std::size_t e = rest.find("\r\n");
    const std::string_view field = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
    const std::size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = field.substr(0, colon);
    const std::string_view value = egress::trimmed(field.substr(colon + 1));
    if (ascii_iequals(name, "retry-after")) {
      long seconds = 0;
      auto [q, err] = std::from_chars(value.data(), value.data() + value.size(), seconds);
      if (err == std::errc() && q == value.data() + value.size() && seconds >= 0)
        r.retry_after_seconds = seconds;
    } else if (ascii_iequals(name, "connection")) {
      if (ascii_iequals(value, "close")) r.close = true;
      if (ascii_iequals(value, "keep-alive") && r.version_minor == 0) r.close = false;
    }
  }
  return r;
}

}  // namespace brig::llm
