// The pure half of the LLM proxy: which route a request names, what key it
// presented, and the head sent upstream with the real key in the route's
// header. No I/O; the proxy (proxy.h) moves the bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/egress/http_head.h"
#include "server/policy/llm_routes.h"
#include "server/policy/policy.h"

namespace brig::llm {

// A route as the proxy serves it: the policy's, and its target parsed.
struct Route {
  policy::LlmRoute policy;
  policy::LlmTarget target;
};

// The route /<prefix>/... names, and the path to ask its target for (the
// target's own path, then what followed the prefix, query included).
struct Routed {
  std::size_t route = 0;  // index into the routes
  std::string upstream_path;
};
std::optional<Routed> route_request(std::span<const Route> routes, std::string_view path);

// The keys a request presented: every value of x-api-key, of the route's
// own header, and the token of each `Authorization: Bearer`. `malformed`
// holds what cannot be a placeholder at all (another Authorization scheme).
struct Presented {
  std::vector<std::string_view> keys;
  std::vector<std::string> malformed;
};
Presented presented_keys(const egress::RequestHead& head, const Route& route);

// The head for the route's target: origin-form `upstream_path`, the
// client's HTTP/1.x, Host the target's, hop-by-hop headers dropped (and the
// names Connection lists), every credential header the client sent dropped
// (x-api-key, Authorization, the route's header), Accept-Encoding dropped
// (the response comes uncompressed, so its usage can be read), Expect
// dropped (the proxy answered it), and the key in the route's header only:
// `Authorization: Bearer <key>` for "bearer", else `<header>: <key>`.
// `key` is the real key: the caller wipes the result once it is written.
std::string upstream_request_head(const egress::RequestHead& head, const Route& route,
                                  std::string_view upstream_path, std::string_view key);

// Whether the client asked for `Expect: 100-continue`.
bool expects_continue(const egress::RequestHead& head);
// Whether the client's connection may carry another request after this one
// (HTTP/1.1 without `Connection: close`).
bool client_keeps_alive(const egress::RequestHead& head);

// A response head as the proxy needs it for retries and pooling.
struct ResponseHead {
  int status = 0;
  int version_minor = 1;
  std::size_t size = 0;                     // bytes, the empty line included
  std::optional<long> retry_after_seconds;  // Retry-After as seconds, when given so
  bool close = false;                       // Connection: close (or HTTP/1.0 without keep-alive)
};
// nullopt while the head is incomplete; `bad` set when it is malformed or
// longer than max_size.
std::optional<ResponseHead> parse_response_head(std::string_view bytes, std::size_t max_size,
                                                bool& bad);

}  // namespace brig::llm
