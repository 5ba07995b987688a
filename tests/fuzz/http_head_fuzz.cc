// The egress proxy's request-head parser (server/egress/http_head.h): the
// first bytes a jailed command sends the proxy. Also checks that a head it
// accepts is one the upstream rewrite can render, and that the parse does
// not depend on how much of the stream has arrived: any prefix of a
// complete head is incomplete, and the head parses the same with more bytes
// after it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/egress/http_head.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using brig::egress::HeadParse;
  constexpr std::size_t kMax = 16 * 1024;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const HeadParse parse = brig::egress::parse_request_head(bytes, kMax);
  if (parse.status != HeadParse::Status::complete) return 0;
  const auto& head = parse.head;
  if (head.size == 0 || head.size > bytes.size() || head.size > kMax) std::abort();
  if (head.host.empty()) std::abort();
  if (head.method != "CONNECT") {
    const std::string upstream = brig::egress::upstream_head(head);
    if (upstream.size() < 4 || upstream.substr(upstream.size() - 4) != "\r\n\r\n") std::abort();
  }
  // One byte short of the head's end is still waiting for it.
  const HeadParse shorter = brig::egress::parse_request_head(bytes.substr(0, head.size - 1), kMax);
  if (shorter.status == HeadParse::Status::complete) std::abort();
  // The head alone parses to the same request.
  const HeadParse alone = brig::egress::parse_request_head(bytes.substr(0, head.size), kMax);
  if (alone.status != HeadParse::Status::complete || alone.head.size != head.size ||
      alone.head.host != head.host || alone.head.port != head.port ||
      alone.head.target != head.target) {
    std::abort();
  }
  return 0;
}
