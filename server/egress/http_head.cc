// The proxy's request head, in two passes.
//
// Our own pass finds where the head ends and refuses what Debian's
// libhttp-parser lets through: its library is built with
// HTTP_PARSER_STRICT=0, so it takes bare LF line ends, obs-fold
// continuations and spaces in header names, and a NUL or CR in the wrong
// place is easiest to refuse before anything is split. It also bounds the
// head by the caller's max_size: http_parser's own limit
// (http_parser_set_max_header_size) is one global for the whole process.
//
// libhttp-parser then reads the head we found: it knows the method names,
// the URL and header value characters, the version syntax, Content-Length
// (digits, overflow, a second one) against Transfer-Encoding (chunked last
// or refused), CONNECT (whose head ends where the tunnel begins), and
// http_parser_parse_url splits absolute-form and authority-form targets,
// IPv6 brackets and userinfo included. Those are the parts request
// smuggling lives in, and a parser used in Node.js for years has seen more
// of them than a new one would.
//
// What is left is the proxy's own policy on top: only http:// absolute-form
// and CONNECT authority-form, HTTP/1.0 and 1.1, one Host that agrees with
// the URL.
#include "server/egress/http_head.h"

#include <http_parser.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "jail/base/ascii.h"

namespace brig::egress {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

namespace {

// RFC 9110 tchar: what a header name (and a Connection option) may hold.
bool is_tchar(unsigned char c) {
  if (std::isalnum(c) != 0) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

// field-value: visible ASCII, obs-text, and SP/HTAB between them.
bool is_field_value(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}

HeadParse failed(HeadParse::Status status, std::string why) {
  HeadParse r;
  r.status = status;
  r.why = std::move(why);
  return r;
}

HeadParse bad(std::string why) {
  return failed(HeadParse::Status::bad, std::move(why));
}

// Where the head ends (one past its empty line), 0 when it has not ended in
// `bytes`, or the refusal. Line ends must be CRLF: a bare LF is refused,
// not taken as a line end, because the proxy rewrites the head and an
// upstream that splits lines differently from us would see other headers
// than we decided on.
struct Framing {
  std::size_t end = 0;
  std::string why;  // non-empty: refused
};

Framing find_end(std::string_view bytes) {
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c == '\0') return {0, fmt::format("a NUL byte at offset {}", i)};
    if (c == '\r') {
      if (i + 1 < bytes.size() && bytes[i + 1] != '\n') {
        return {0, fmt::format("a CR not followed by LF at offset {}", i)};
      }
      continue;
    }
    if (c == '\n') {
      if (i == 0 || bytes[i - 1] != '\r') {
        return {0, fmt::format("a bare LF at offset {} (lines end with CRLF)", i)};
      }
      if (i - 1 == line_start) {
        // RFC 9112 lets a server skip empty lines before the request line;
        // one request per connection leaves nothing they could follow.
        if (line_start == 0) return {0, "an empty line before the request line"};
        return {i + 1, {}};
      }
      line_start = i + 1;
      continue;
    }
    if (i == line_start && line_start != 0 && (c == ' ' || c == '\t')) {
      return {0, "a header line folded onto the next (obs-fold)"};
    }
  }
  return {};
}

// What libhttp-parser reports through its callbacks. A field or value may
// arrive in pieces, so each callback appends to the last one of its kind.
struct Collected {
  std::string url;
  std::vector<HttpHeader> headers;
  bool in_value = false;
  bool headers_complete = false;
};

Collected& collected(http_parser* p) {
  return *static_cast<Collected*>(p->data);
}

int on_url(http_parser* p, const char* at, std::size_t n) {
  collected(p).url.append(at, n);
  return 0;
}

int on_header_field(http_parser* p, const char* at, std::size_t n) {
  Collected& c = collected(p);
  if (c.headers.empty() || c.in_value) c.headers.emplace_back();
  c.in_value = false;
  c.headers.back().name.append(at, n);
  return 0;
}

int on_header_value(http_parser* p, const char* at, std::size_t n) {
  Collected& c = collected(p);
  c.in_value = true;
  c.headers.back().value.append(at, n);
  return 0;
}

int on_headers_complete(http_parser* p) {
  collected(p).headers_complete = true;
  return 0;
}

std::string_view field(std::string_view url, const http_parser_url& u, int f) {
  if ((u.field_set & (1u << f)) == 0) return {};
  return url.substr(u.field_data[f].off, u.field_data[f].len);
}

bool has(const http_parser_url& u, int f) {
  return (u.field_set & (1u << f)) != 0;
}

// A port as written after the host's ':': 1-65535, digits only.
std::optional<std::uint16_t> port_number(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

// The text after an authority's last ':' outside IPv6 brackets, for the
// messages that say what is wrong with the port.
std::optional<std::string_view> port_text(std::string_view authority) {
  const std::size_t close = authority.rfind(']');
  const std::size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos || (close != std::string_view::npos && colon < close)) {
    return std::nullopt;
  }
  return authority.substr(colon + 1);
}

// Fills head.host/port from a URL's host and port fields.
std::string set_upstream(RequestHead& head, std::string_view url, const http_parser_url& u,
                         std::uint16_t default_port) {
  const std::string_view host = field(url, u, UF_HOST);
  if (host.empty()) return "no host";
  // http_parser takes an IPv6 zone ("[fe80::1%25eth0]"); a zone names an
  // interface of this host, which is nothing a jail may choose.
  if (host.find('%') != std::string_view::npos) return fmt::format("host {} has a zone", host);
  head.host = ascii_lowered(host);
  head.port = default_port;
  if (has(u, UF_PORT)) {
    auto port = port_number(field(url, u, UF_PORT));
    if (!port) return fmt::format("port {} is not 1-65535", field(url, u, UF_PORT));
    head.port = *port;
  }
  return {};
}

HeadParse connect_target(HeadParse r) {
  RequestHead& head = r.head;
  const std::string_view target = head.target;
  if (target.find('@') != std::string_view::npos) {
    return bad(fmt::format("CONNECT {}: userinfo (user@) is not allowed", target));
  }
  auto port = port_text(target);
  if (!port) return bad(fmt::format("CONNECT {}: needs host:port", target));
  if (!port_number(*port)) {
    return bad(fmt::format("CONNECT {}: port {} is not 1-65535", target, *port));
  }
  http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(target.data(), target.size(), 1, &u) != 0) {
    return bad(fmt::format("CONNECT {}: not an authority (host:port)", target));
  }
  if (std::string why = set_upstream(head, target, u, 0); !why.empty()) {
    return bad(fmt::format("CONNECT {}: {}", target, why));
  }
  r.status = HeadParse::Status::complete;
  return r;
}

// The authority of a Host header, parsed as the URL's is, so that the two
// compare by host (any case) and port (80 when none).
bool host_agrees(std::string_view value, const RequestHead& head) {
  if (value.empty() || value.find_first_of("/?#@") != std::string_view::npos) return false;
  const std::string url = fmt::format("http://{}/", value);
  http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(url.data(), url.size(), 0, &u) != 0) return false;
  RequestHead other;
  if (!set_upstream(other, url, u, 80).empty()) return false;
  return other.host == head.host && other.port == head.port;
}

HeadParse absolute_target(HeadParse r) {
  RequestHead& head = r.head;
  const std::string_view target = head.target;
  http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(target.data(), target.size(), 0, &u) != 0) {
    return bad(fmt::format("request target {} is not a URL", target));
  }
  if (!has(u, UF_SCHEMA)) {
    // Origin-form ("/path") or asterisk-form ("*"): a request for a server.
    return failed(HeadParse::Status::not_proxy,
                  fmt::format("{} {} is a request for a server, not a proxy: name the URL "
                              "(http://host/path) or CONNECT host:port",
                              head.method, target));
  }
  const std::string_view scheme = field(target, u, UF_SCHEMA);
  if (ascii_iequals(scheme, "https")) {
    return bad(fmt::format("{}: https goes through CONNECT host:443", target));
  }
  if (!ascii_iequals(scheme, "http")) {
    return bad(fmt::format("{}: only http:// URLs (and CONNECT) are proxied", target));
  }
  if (has(u, UF_USERINFO)) return bad(fmt::format("{}: userinfo (user@) is not allowed", target));
  if (has(u, UF_FRAGMENT)) return bad(fmt::format("{}: a request target has no #fragment", target));
  if (std::string why = set_upstream(head, target, u, 80); !why.empty()) {
    return bad(fmt::format("{}: {}", target, why));
  }
  head.path = has(u, UF_PATH) ? std::string(field(target, u, UF_PATH)) : "/";
  if (has(u, UF_QUERY)) head.path += fmt::format("?{}", field(target, u, UF_QUERY));

  // RFC 9112 has a proxy replace a disagreeing Host; we refuse instead, so
  // the client learns that the name the policy decided on is the URL's, and
  // no upstream (a CDN, a virtual host) is ever asked for another name than
  // the one that was allowed.
  for (const HttpHeader& h : head.headers) {
    if (ascii_iequals(h.name, "host") && !host_agrees(h.value, head)) {
      return bad(fmt::format("Host {} disagrees with the URL's authority {}", h.value,
                             field(target, u, UF_HOST)));
    }
  }
  r.status = HeadParse::Status::complete;
  return r;
}

// The options of every Connection header, comma-separated.
std::vector<std::string_view> connection_options(const std::vector<HttpHeader>& headers) {
  std::vector<std::string_view> options;
  for (const HttpHeader& h : headers) {
    if (!ascii_iequals(h.name, "connection")) continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view option = trimmed(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (!option.empty()) options.push_back(option);
    }
  }
  return options;
}

// Connection options naming the framing or the Host would have the proxy
// drop them while the body stays framed by them: refused outright.
std::string connection_check(const std::vector<HttpHeader>& headers) {
  for (std::string_view option : connection_options(headers)) {
    if (!is_token(option)) return fmt::format("Connection option \"{}\" is not a token", option);
    if (ascii_iequals(option, "content-length") || ascii_iequals(option, "transfer-encoding") ||
        ascii_iequals(option, "host")) {
      return fmt::format("Connection may not list {}", option);
    }
  }
  return {};
}

bool is_hop_by_hop(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "connection", "proxy-connection", "proxy-authorization", "keep-alive", "te",
      "trailer",    "upgrade"};
  return std::any_of(std::begin(kNames), std::end(kNames),
                     [&](std::string_view n) { return ascii_iequals(n, name); });
}

}  // namespace

HeadParse parse_request_head(std::string_view bytes, std::size_t max_size, RequestForm form) {
  const Framing framing = find_end(bytes.substr(0, std::min(bytes.size(), max_size)));
  if (!framing.why.empty()) return bad(framing.why);
  if (framing.end == 0) {
    if (bytes.size() < max_size) return {};
    return failed(HeadParse::Status::too_large,
                  fmt::format("the request head is longer than {} bytes", max_size));
  }
  const std::string_view text = bytes.substr(0, framing.end);

  Collected c;
  http_parser_settings settings;
  http_parser_settings_init(&settings);
  settings.on_url = on_url;
  settings.on_header_field = on_header_field;
  settings.on_header_value = on_header_value;
  settings.on_headers_complete = on_headers_complete;
  http_parser parser;
  http_parser_init(&parser, HTTP_REQUEST);
  parser.data = &c;
  const std::size_t parsed = http_parser_execute(&parser, &settings, text.data(), text.size());
  const auto err = HTTP_PARSER_ERRNO(&parser);
  if (err == HPE_HEADER_OVERFLOW) {
    return failed(HeadParse::Status::too_large,
                  "the request head is longer than libhttp-parser takes");
  }
  if (err == HPE_UNEXPECTED_CONTENT_LENGTH) {
    // Two lengths, or a length beside chunked: which one frames the body is
    // what request smuggling plays on.
    return bad("a second Content-Length, or Content-Length with Transfer-Encoding");
  }
  if (err != HPE_OK) {
    return bad(fmt::format("malformed request head: {}", http_errno_description(err)));
  }
  if (parsed != text.size() || !c.headers_complete) {
    return bad("malformed request head: it did not end at its empty line");
  }

  HeadParse r;
  RequestHead& head = r.head;
  head.method = http_method_str(static_cast<http_method>(parser.method));
  head.target = std::move(c.url);
  head.size = framing.end;

  // The request line exactly: http_parser also takes runs of spaces, and
  // HTTP/0.9's "GET /" without a version.
  const std::string_view line = text.substr(0, text.find("\r\n"));
  if (parser.http_major != 1 || parser.http_minor > 1) {
    return bad(fmt::format("{}: only HTTP/1.0 and HTTP/1.1", line));
  }
  head.version_minor = parser.http_minor;
  if (line != fmt::format("{} {} HTTP/1.{}", head.method, head.target, head.version_minor)) {
    return bad(fmt::format("malformed request line: {}", line));
  }

  int hosts = 0;
  for (HttpHeader& h : c.headers) {
    if (!is_token(h.name)) return bad(fmt::format("malformed header name \"{}\"", h.name));
    h.value = std::string(trimmed(h.value));
    if (!is_field_value(h.value)) return bad(fmt::format("header {}: a control character", h.name));
    if (ascii_iequals(h.name, "host")) ++hosts;
  }
  if (hosts > 1) return bad("more than one Host header");
  if (std::string why = connection_check(c.headers); !why.empty()) return bad(why);
  head.headers = std::move(c.headers);

  if (form == RequestForm::origin) {
    // A server's request: "/path?query" only (RFC 9112 origin-form).
    if (parser.method == HTTP_CONNECT || !head.target.starts_with('/'))
      return bad(fmt::format("{} {}: write the path (origin-form, \"/...\"), not a proxy request",
                             head.method, head.target));
    if (head.target.find('#') != std::string::npos)
      return bad(fmt::format("{}: a request target has no #fragment", head.target));
    head.path = head.target;
    r.status = HeadParse::Status::complete;
    return r;
  }
  if (parser.method == HTTP_CONNECT) return connect_target(std::move(r));
  return absolute_target(std::move(r));
}

std::string upstream_head(const RequestHead& head) {
  // Names the client listed in Connection are hop-by-hop for this hop only.
  const std::vector<std::string_view> listed = connection_options(head.headers);
  auto is_listed = [&](std::string_view name) {
    return std::any_of(listed.begin(), listed.end(),
                       [&](std::string_view o) { return ascii_iequals(o, name); });
  };

  // The client's version, not ours: the relay passes the response through
  // unchanged, so the upstream must frame it for what the client speaks
  // (no chunked response to an HTTP/1.0 client).
  std::string out = fmt::format("{} {} HTTP/1.{}\r\n", head.method, head.path, head.version_minor);
  const bool has_host =
      std::any_of(head.headers.begin(), head.headers.end(),
                  [](const HttpHeader& h) { return ascii_iequals(h.name, "host"); });
  if (!has_host) {
    const bool v6 = head.host.find(':') != std::string::npos;
    out += v6 ? fmt::format("Host: [{}]", head.host) : fmt::format("Host: {}", head.host);
    if (head.port != 80) out += fmt::format(":{}", head.port);
    out += "\r\n";
  }
  for (const HttpHeader& h : head.headers) {
    if (is_hop_by_hop(h.name)) continue;
    if (is_listed(h.name)) continue;
    out += fmt::format("{}: {}\r\n", h.name, h.value);
  }
  out += "Connection: close\r\n\r\n";
  return out;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Error";
  }
}

std::string error_response(int status, std::string_view body) {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
      "Connection: close\r\n\r\n{}",
      status, reason_phrase(status), body.size(), body);
}

}  // namespace brig::egress
