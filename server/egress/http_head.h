// The HTTP/1.x request head a client sends the egress proxy: parsed (pure,
// no I/O) into what the proxy decides on, and rewritten for the upstream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace brig::egress {

// `s` without the blanks (space, tab) HTTP allows around a field value.
std::string_view trimmed(std::string_view s);

struct HttpHeader {
  std::string name;   // as sent
  std::string value;  // leading and trailing whitespace removed
};

struct RequestHead {
  std::string method;     // "CONNECT", "GET", ...
  std::string target;     // as sent: "host:port" (CONNECT) or "http://host[:port]/path"
  int version_minor = 1;  // HTTP/1.x
  std::vector<HttpHeader> headers;
  std::size_t size = 0;  // bytes of the head, its final empty line included
  // The upstream: CONNECT's authority, or the absolute-form URL's host and
  // port (80 when none). host is lower-case, without brackets for IPv6.
  std::string host;
  std::uint16_t port = 0;
  std::string path;  // absolute-form: path and query ("/" when empty); CONNECT: ""
};

struct HeadParse {
  enum class Status {
    complete,    // head holds the request; bytes past head.size are the body or tunnel data
    incomplete,  // no empty line yet and still under the size limit: read more
    bad,         // malformed: answer 400 (why says what)
    too_large,   // no end within max_size bytes: answer 431
    not_proxy,   // a well-formed origin-form request ("GET /"): not for a proxy, answer 400
  };
  Status status = Status::incomplete;
  RequestHead head;
  std::string why;  // bad, too_large, not_proxy: for the response body
};

// Parses the head at the start of `bytes`. Only "http://" absolute-form
// (https:// needs CONNECT) and CONNECT authority-form are proxy requests.
// Strict where an upstream could read the head otherwise than the proxy
// decided on it: lines end with CRLF (a bare LF is bad, not a line end), and
// obs-fold, a NUL, a second Content-Length (even an equal one), a Host that
// disagrees with the absolute URL's authority (RFC 9112 would replace it)
// and a second Host are bad. HTTP/1.0 and 1.1 only.
//
// RequestForm::origin reads a server's request instead (the LLM proxy's):
// the same checks, with the target an origin-form "/path?query" (in
// head.path too; head.host and port stay empty) and CONNECT refused.
enum class RequestForm { proxy, origin };
HeadParse parse_request_head(std::string_view bytes, std::size_t max_size,
                             RequestForm form = RequestForm::proxy);

// The head to send upstream for a non-CONNECT request: origin-form request
// line, hop-by-hop headers dropped (Connection and the names it lists,
// Proxy-Connection, Proxy-Authorization, Keep-Alive, TE, Trailer, Upgrade),
// Host set from the URL when missing, and "Connection: close" (one request
// per proxied connection, so every request is decided on its own).
std::string upstream_head(const RequestHead& head);

// The reason phrase of the statuses brig answers with ("Error" for others).
std::string_view reason_phrase(int status);

// A complete response for a refusal or failure: status line with the
// status's reason phrase, Content-Type text/plain, Content-Length,
// Connection: close, the body.
std::string error_response(int status, std::string_view body);

}  // namespace brig::egress
