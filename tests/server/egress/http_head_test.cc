#include "server/egress/http_head.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

namespace brig::egress {
namespace {

using Status = HeadParse::Status;
using namespace std::string_literals;

HeadParse parse(std::string_view bytes, std::size_t max_size = 8192) {
  return parse_request_head(bytes, max_size);
}

const char* status_name(Status s) {
  switch (s) {
    case Status::complete:
      return "complete";
    case Status::incomplete:
      return "incomplete";
    case Status::bad:
      return "bad";
    case Status::too_large:
      return "too_large";
    case Status::not_proxy:
      return "not_proxy";
  }
  return "?";
}

// ----- well-formed proxy requests -------------------------------------------------

TEST(HttpHead, AbsoluteFormGet) {
  const std::string bytes =
      "GET http://Example.COM:8080/a/b?x=1&y HTTP/1.1\r\n"
      "Host: example.com:8080\r\n"
      "User-Agent: curl/7.88.1\r\n"
      "Accept:  */* \t\r\n"
      "\r\n";
  const HeadParse r = parse(bytes);
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.method, "GET");
  EXPECT_EQ(r.head.target, "http://Example.COM:8080/a/b?x=1&y");
  EXPECT_EQ(r.head.version_minor, 1);
  EXPECT_EQ(r.head.host, "example.com");
  EXPECT_EQ(r.head.port, 8080);
  EXPECT_EQ(r.head.path, "/a/b?x=1&y");
  EXPECT_EQ(r.head.size, bytes.size());
  ASSERT_EQ(r.head.headers.size(), 3u);
  EXPECT_EQ(r.head.headers[0].name, "Host");
  EXPECT_EQ(r.head.headers[0].value, "example.com:8080");
  EXPECT_EQ(r.head.headers[2].name, "Accept");
  EXPECT_EQ(r.head.headers[2].value, "*/*");
}

TEST(HttpHead, DefaultPortAndPath) {
  HeadParse r = parse("GET http://a.test HTTP/1.0\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.port, 80);
  EXPECT_EQ(r.head.path, "/");
  EXPECT_EQ(r.head.version_minor, 0);

  r = parse("GET http://a.test?q=1 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.path, "/?q=1");

  r = parse("HEAD HTTP://A.TEST/X HTTP/1.1\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.host, "a.test");
  EXPECT_EQ(r.head.path, "/X");
}

TEST(HttpHead, Connect) {
  const std::string head = "CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n";
  const HeadParse r = parse(head);
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.method, "CONNECT");
  EXPECT_EQ(r.head.target, "PyPI.org:443");
  EXPECT_EQ(r.head.host, "pypi.org");
  EXPECT_EQ(r.head.port, 443);
  EXPECT_EQ(r.head.path, "");
  EXPECT_EQ(r.head.size, head.size());
}

TEST(HttpHead, Ipv6Literals) {
  HeadParse r = parse("CONNECT [::1]:443 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.host, "::1");
  EXPECT_EQ(r.head.port, 443);

  r = parse("GET http://[FD00::A]:8080/p HTTP/1.1\r\nHost: [fd00::a]:8080\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.host, "fd00::a");
  EXPECT_EQ(r.head.port, 8080);
  EXPECT_EQ(r.head.path, "/p");
}

TEST(HttpHead, HostAgreeingWithTheUrlIsKept) {
  for (const char* host : {"a.test", "A.Test", "a.test:80", " a.test "}) {
    SCOPED_TRACE(host);
    const HeadParse r = parse(fmt::format("GET http://a.test/ HTTP/1.1\r\nHost: {}\r\n\r\n", host));
    EXPECT_EQ(r.status, Status::complete) << r.why;
  }
  // CONNECT's head never goes upstream: its Host is not compared.
  EXPECT_EQ(parse("CONNECT a.test:443 HTTP/1.1\r\nHost: other\r\n\r\n").status, Status::complete);
}

// ----- the body or tunnel after the head ---------------------------------------------

TEST(HttpHead, BodyBytesAfterTheHeadAreNotPartOfIt) {
  const std::string head = "POST http://a.test/up HTTP/1.1\r\nContent-Length: 7\r\n\r\n";
  const std::string body = "a\0\r\n\nb\n"s;  // what the head may not hold, the body may
  const std::string bytes = head + body;
  const HeadParse r = parse(bytes);
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.size, head.size());
  EXPECT_EQ(bytes.substr(r.head.size), body);
}

TEST(HttpHead, ChunkedBodyAndTunnelDataAfterTheHead) {
  const std::string chunked = "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  HeadParse r = parse(chunked + "5\r\nhello\r\n0\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.size, chunked.size());

  const std::string connect = "CONNECT a.test:443 HTTP/1.1\r\n\r\n";
  const std::string hello = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n";
  r = parse(connect + hello);
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.size, connect.size());
}

// ----- incremental reads and the size limit ------------------------------------------

TEST(HttpHead, ByteAtATimeCompletesExactlyAtTheEmptyLine) {
  for (std::string head : {"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nX: y\r\n\r\n"s,
                           "CONNECT a.test:443 HTTP/1.0\r\n\r\n"s}) {
    const std::string bytes = head + "BODY";
    for (std::size_t n = 0; n <= bytes.size(); ++n) {
      SCOPED_TRACE(n);
      const HeadParse r = parse(std::string_view(bytes).substr(0, n));
      if (n < head.size()) {
        EXPECT_EQ(r.status, Status::incomplete) << status_name(r.status) << ": " << r.why;
      } else {
        ASSERT_EQ(r.status, Status::complete) << r.why;
        EXPECT_EQ(r.head.size, head.size());
      }
    }
  }
}

TEST(HttpHead, HeadOfExactlyMaxSize) {
  const std::string head = "GET http://a.test/ HTTP/1.1\r\nX-Pad: 0123456789\r\n\r\n";
  const std::string bytes = head + "body past the limit";
  const std::size_t n = head.size();

  HeadParse r = parse(bytes, n);  // the empty line is the limit's last two bytes
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(r.head.size, n);

  r = parse(bytes, n - 1);  // one byte short of its end
  EXPECT_EQ(r.status, Status::too_large);
  EXPECT_NE(r.why.find(std::to_string(n - 1)), std::string::npos) << r.why;

  // n - 1 bytes read of a limit of n: may still end.
  EXPECT_EQ(parse(std::string_view(bytes).substr(0, n - 1), n).status, Status::incomplete);
  // n - 1 bytes read of a limit of n - 1, no end: cannot end within it.
  EXPECT_EQ(parse(std::string_view(bytes).substr(0, n - 1), n - 1).status, Status::too_large);
  // A flood of header lines, read a byte past the limit.
  const std::string flood = "GET http://a.test/ HTTP/1.1\r\n" + std::string(9000, 'x');
  EXPECT_EQ(parse(flood, 8192).status, Status::too_large);
}

// ----- refusals ----------------------------------------------------------------------

struct Refusal {
  const char* what;
  std::string bytes;
  std::string_view why;  // a part of the reason
};

TEST(HttpHead, Refusals) {
  const std::string end = "\r\n\r\n";
  const Refusal cases[] = {
      {"two spaces in the request line", "GET  http://a/ HTTP/1.1" + end, "request line"},
      {"trailing space in the request line", "GET http://a/ HTTP/1.1 " + end, ""},
      {"no version (HTTP/0.9)", "GET http://a/" + end, "HTTP/1.0 and HTTP/1.1"},
      {"HTTP/2.0", "GET http://a/ HTTP/2.0" + end, "HTTP/1.0 and HTTP/1.1"},
      {"HTTP/1.2", "GET http://a/ HTTP/1.2" + end, "HTTP/1.0 and HTTP/1.1"},
      {"HTTP/0.9 with a version", "GET http://a/ HTTP/0.9" + end, "HTTP/1.0 and HTTP/1.1"},
      {"HTTP/1.12", "GET http://a/ HTTP/1.12" + end, "version"},
      {"not HTTP", "GET http://a/ HTCPCP/1.0" + end, ""},
      {"unknown method", "BREW http://a/ HTTP/1.1" + end, "method"},
      {"lower-case method", "get http://a/ HTTP/1.1" + end, "method"},
      {"space in the target", "GET http://a/b c HTTP/1.1" + end, ""},
      {"bare LF line end", "GET http://a/ HTTP/1.1\nHost: a\r\n\r\n", "bare LF"},
      {"bare LF empty line", "GET http://a/ HTTP/1.1\r\nHost: a\r\n\n", "bare LF"},
      {"only LFs", "GET http://a/ HTTP/1.1\n\n", "bare LF"},
      {"CR without LF", "GET http://a/ HTTP/1.1\rHost: a" + end, "CR not followed by LF"},
      {"obs-fold with a space", "GET http://a/ HTTP/1.1\r\nX: a\r\n b" + end, "obs-fold"},
      {"obs-fold with a tab", "GET http://a/ HTTP/1.1\r\nX: a\r\n\tb" + end, "obs-fold"},
      {"space inside a header name", "GET http://a/ HTTP/1.1\r\nHo st: a" + end, "header name"},
      {"space before the colon", "GET http://a/ HTTP/1.1\r\nHost : a" + end, "header name"},
      {"control byte in a header name", "GET http://a/ HTTP/1.1\r\nX\x01Y: a" + end, ""},
      {"empty header name", "GET http://a/ HTTP/1.1\r\n: a" + end, ""},
      {"no colon", "GET http://a/ HTTP/1.1\r\nHost a" + end, ""},
      {"control byte in a value", "GET http://a/ HTTP/1.1\r\nX: a\x01z" + end, ""},
      {"DEL in a value", "GET http://a/ HTTP/1.1\r\nX: a\x7fz" + end, "header"},
      {"NUL in the request line", "GET http://a/\0 HTTP/1.1"s + end, "NUL"},
      {"NUL in a header name", "GET http://a/ HTTP/1.1\r\nX\0: a"s + end, "NUL"},
      {"NUL in a header value", "GET http://a/ HTTP/1.1\r\nX: a\0"s + end, "NUL"},
      {"Content-Length twice, different",
       "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n"
       "Content-Length: 6" +
           end,
       "Content-Length"},
      // libhttp-parser refuses a second Content-Length even when it agrees.
      {"Content-Length twice, same",
       "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n"
       "Content-Length: 5" +
           end,
       "Content-Length"},
      {"Content-Length list", "POST http://a/ HTTP/1.1\r\nContent-Length: 5, 6" + end, ""},
      {"Content-Length not a number", "POST http://a/ HTTP/1.1\r\nContent-Length: -1" + end, ""},
      {"Content-Length overflows",
       "POST http://a/ HTTP/1.1\r\nContent-Length: "
       "99999999999999999999999" +
           end,
       ""},
      {"Content-Length and Transfer-Encoding",
       "POST http://a/ HTTP/1.1\r\nContent-Length: 5\r\n"
       "Transfer-Encoding: chunked" +
           end,
       "with Transfer-Encoding"},
      {"Transfer-Encoding and Content-Length",
       "POST http://a/ HTTP/1.1\r\n"
       "Transfer-Encoding: chunked\r\n"
       "Content-Length: 5" +
           end,
       "with Transfer-Encoding"},
      {"chunked not last", "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked, gzip" + end, ""},
      {"CONNECT without a port", "CONNECT a.test HTTP/1.1" + end, "host:port"},
      {"CONNECT with an empty port", "CONNECT a.test: HTTP/1.1" + end, "1-65535"},
      {"CONNECT to port 0", "CONNECT a.test:0 HTTP/1.1" + end, "1-65535"},
      {"CONNECT to port 65536", "CONNECT a.test:65536 HTTP/1.1" + end, "1-65535"},
      {"CONNECT to port 99999999", "CONNECT a.test:99999999 HTTP/1.1" + end, "1-65535"},
      {"CONNECT to a signed port", "CONNECT a.test:+443 HTTP/1.1" + end, "1-65535"},
      {"CONNECT IPv6 without a port", "CONNECT [::1] HTTP/1.1" + end, "host:port"},
      {"CONNECT with userinfo", "CONNECT user@a.test:443 HTTP/1.1" + end, "userinfo"},
      {"CONNECT with a path", "CONNECT a.test:443/x HTTP/1.1" + end, ""},
      {"CONNECT to a URL", "CONNECT http://a.test:443/ HTTP/1.1" + end, ""},
      {"URL with userinfo", "GET http://user:pw@a.test/ HTTP/1.1" + end, "userinfo"},
      {"URL with port 0", "GET http://a.test:0/ HTTP/1.1" + end, "1-65535"},
      {"URL with port 65536", "GET http://a.test:65536/ HTTP/1.1" + end, ""},
      {"URL with an empty port", "GET http://a.test:/ HTTP/1.1" + end, ""},
      {"URL without a host", "GET http:///x HTTP/1.1" + end, ""},
      {"URL with a fragment", "GET http://a.test/#top HTTP/1.1" + end, "fragment"},
      {"URL with an IPv6 zone", "GET http://[fe80::1%25eth0]/ HTTP/1.1" + end, "zone"},
      {"https:// without CONNECT", "GET https://a.test/ HTTP/1.1" + end, "CONNECT"},
      {"another scheme", "GET ftp://a.test/ HTTP/1.1" + end, "only http://"},
      {"Host disagrees", "GET http://a.test/ HTTP/1.1\r\nHost: b.test" + end, "disagrees"},
      {"Host port disagrees", "GET http://a.test/ HTTP/1.1\r\nHost: a.test:81" + end, "disagrees"},
      {"Host without the URL's port", "GET http://a.test:8080/ HTTP/1.1\r\nHost: a.test" + end,
       "disagrees"},
      {"Host empty", "GET http://a.test/ HTTP/1.1\r\nHost:" + end, "disagrees"},
      {"Host with a path", "GET http://a.test/ HTTP/1.1\r\nHost: a.test/x" + end, "disagrees"},
      {"Host with userinfo", "GET http://a.test/ HTTP/1.1\r\nHost: u@a.test" + end, "disagrees"},
      {"two Host headers", "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: a.test" + end,
       "more than one Host"},
      {"Connection lists Content-Length",
       "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\n"
       "Connection: close, Content-Length" +
           end,
       "Connection may not list"},
      {"Connection lists Transfer-Encoding",
       "POST http://a/ HTTP/1.1\r\n"
       "Transfer-Encoding: chunked\r\n"
       "Connection: transfer-encoding" +
           end,
       "Connection may not list"},
      {"Connection option not a token", "GET http://a/ HTTP/1.1\r\nConnection: a b" + end,
       "not a token"},
      {"empty line first", "\r\nGET http://a/ HTTP/1.1" + end, "empty line before"},
      {"nothing but the empty line", "\r\n\r\n", "empty line before"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.what);
    const HeadParse r = parse(c.bytes);
    EXPECT_EQ(r.status, Status::bad) << status_name(r.status) << ": " << r.why;
    EXPECT_FALSE(r.why.empty());
    EXPECT_NE(r.why.find(c.why), std::string::npos) << r.why;
  }
}

TEST(HttpHead, FramingRefusalsComeBeforeTheHeadEnds) {
  // No need to wait for the empty line to refuse these.
  EXPECT_EQ(parse("GET http://a/\0"s).status, Status::bad);
  EXPECT_EQ(parse("GET http://a/ HTTP/1.1\n").status, Status::bad);
  EXPECT_EQ(parse("GET http://a/ HTTP/1.1\r\nX: a\r\n b").status, Status::bad);
  // A CR at the end of what was read may yet be followed by its LF.
  EXPECT_EQ(parse("GET http://a/ HTTP/1.1\r").status, Status::incomplete);
}

TEST(HttpHead, OriginFormIsNotForAProxy) {
  HeadParse r = parse("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
  EXPECT_EQ(r.status, Status::not_proxy);
  EXPECT_NE(r.why.find("not a proxy"), std::string::npos) << r.why;
  EXPECT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n").status, Status::not_proxy);
  // Malformed first: the refusal says what is wrong with it.
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost : a.test\r\n\r\n").status, Status::bad);
}

// ----- the head sent upstream --------------------------------------------------------

TEST(HttpHead, UpstreamHeadDropsHopByHopAndAddsHost) {
  const HeadParse r = parse(
      "POST http://a.test:8080/up?x=1 HTTP/1.1\r\n"
      "User-Agent: t\r\n"
      "Connection: keep-alive, X-Secret\r\n"
      "Proxy-Connection: keep-alive\r\n"
      "Proxy-Authorization: Basic dTpw\r\n"
      "Keep-Alive: timeout=5\r\n"
      "TE: trailers\r\n"
      "Trailer: X-Sum\r\n"
      "Upgrade: websocket\r\n"
      "x-secret: 1\r\n"
      "Content-Length: 3\r\n"
      "Accept: */*\r\n"
      "\r\n"
      "abc");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(upstream_head(r.head),
            "POST /up?x=1 HTTP/1.1\r\n"
            "Host: a.test:8080\r\n"
            "User-Agent: t\r\n"
            "Content-Length: 3\r\n"
            "Accept: */*\r\n"
            "Connection: close\r\n"
            "\r\n");
}

TEST(HttpHead, UpstreamHeadKeepsTheClientsHostAndVersion) {
  HeadParse r =
      parse("GET http://a.test/ HTTP/1.0\r\nHost: A.test:80\r\nTransfer-Encoding: chunked\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(upstream_head(r.head),
            "GET / HTTP/1.0\r\nHost: A.test:80\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n");

  r = parse("GET http://[::1]:8080/ HTTP/1.1\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(upstream_head(r.head),
            "GET / HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n");

  r = parse("GET http://a.test HTTP/1.1\r\n\r\n");
  ASSERT_EQ(r.status, Status::complete) << r.why;
  EXPECT_EQ(upstream_head(r.head), "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
}

// ----- refusals' responses -----------------------------------------------------------

TEST(HttpHead, ErrorResponse) {
  EXPECT_EQ(error_response(403, "évil.test is not allowed\n"),
            "HTTP/1.1 403 Forbidden\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 26\r\n"
            "Connection: close\r\n"
            "\r\n"
            "évil.test is not allowed\n");
  // A status without a phrase of its own still makes a well-formed line.
  const std::string r = error_response(599, "");
  EXPECT_EQ(r.substr(0, r.find("\r\n")), "HTTP/1.1 599 Error");
  EXPECT_NE(r.find("Content-Length: 0\r\n"), std::string::npos);
  EXPECT_EQ(reason_phrase(413), "Content Too Large");
}

// ----- random and mutated input ------------------------------------------------------

// Whatever the input, the parser answers in one of its five ways, and what
// it calls complete holds up: the head ends at its empty line within the
// limit, parses the same from exactly its own bytes, and its upstream form
// is a well-formed request.
TEST(HttpHead, MutatedInputNeverCrashesAndCompleteHeadsHoldUp) {
  const std::string seeds[] = {
      "GET http://a.test:8080/x?y HTTP/1.1\r\nHost: a.test:8080\r\nConnection: x, y\r\nX: y\r\n"
      "y: 1\r\n\r\nbody",
      "CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n\x16\x03",
      "POST http://b.test/ HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc",
      "PUT http://c.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTE: x\r\n\r\n0\r\n\r\n",
  };
  const char interesting[] = {'\r', '\n', '\0', ' ', '\t', ':', '@', '[',    ']',    '%',
                              '/',  '?',  '#',  ',', '0',  '9', 'A', '\x7f', '\x80', '\xff'};
  std::mt19937 rng(20240613);
  int complete = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string bytes = seeds[rng() % std::size(seeds)];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const std::size_t at = rng() % bytes.size();
      const char c =
          rng() % 2 ? interesting[rng() % std::size(interesting)] : static_cast<char>(rng() % 256);
      switch (rng() % 4) {
        case 0:
          bytes[at] = c;
          break;
        case 1:
          bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        case 2:
          bytes.erase(at, 1);
          break;
        case 3:
          bytes.resize(at);
          break;
      }
    }
    if (i % 10 == 0) {  // and some of pure noise
      bytes.resize(rng() % 200);
      for (char& c : bytes) c = static_cast<char>(rng() % 256);
    }
    const std::size_t max_size = 16 + rng() % 128;
    const HeadParse r = parse(bytes, max_size);
    SCOPED_TRACE(testing::PrintToString(bytes));
    switch (r.status) {
      case Status::incomplete:
        EXPECT_LT(bytes.size(), max_size);
        break;
      case Status::complete: {
        ++complete;
        ASSERT_LE(r.head.size, std::min(bytes.size(), max_size));
        EXPECT_EQ(bytes.substr(r.head.size - 4, 4), "\r\n\r\n");
        EXPECT_FALSE(r.head.host.empty());
        EXPECT_NE(r.head.port, 0);
        const HeadParse again = parse(std::string_view(bytes).substr(0, r.head.size), max_size);
        EXPECT_EQ(again.status, Status::complete);
        EXPECT_EQ(again.head.size, r.head.size);
        if (r.head.method != "CONNECT") {
          const std::string up = upstream_head(r.head);
          EXPECT_EQ(parse(up, up.size()).status, Status::not_proxy) << up;
        }
        break;
      }
      default:
        EXPECT_FALSE(r.why.empty());
    }
  }
  // The mutations must leave some heads whole, or the checks above checked nothing.
  EXPECT_GT(complete, 100);
}

}  // namespace
}  // namespace brig::egress
