// Where one HTTP/1.x message ends, with http-parser: the relay forwards a
// plain (non-CONNECT) request's body only up to the end of that request, so
// a second request on the same connection never reaches the upstream
// undecided, and it closes the connection once the response has ended,
// even when the upstream ignored "Connection: close".
#pragma once

#include <http_parser.h>

#include <cstddef>
#include <span>
#include <string>

#include "server/egress/flow.h"

namespace brig::egress {

class MessageFilter final : public Filter {
 public:
  enum class Kind { request, response };
  // head_request: the response answers a HEAD (it has no body, whatever its
  // Content-Length says).
  explicit MessageFilter(Kind kind, bool head_request = false);
  MessageFilter(const MessageFilter&) = delete;
  MessageFilter& operator=(const MessageFilter&) = delete;

  std::size_t pass(std::span<const char> bytes) override;
  void end() override;
  bool done() const override { return done_; }
  bool failed() const override { return !why_.empty(); }
  const std::string& why() const { return why_; }
  // The response's final status code (0 before its head).
  int status() const { return status_; }

 private:
  static int on_headers_complete(http_parser* parser);
  static int on_message_complete(http_parser* parser);

  http_parser parser_;
  http_parser_settings settings_;
  Kind kind_;
  bool head_request_;
  bool done_ = false;
  int status_ = 0;
  std::string why_;
};

}  // namespace brig::egress
