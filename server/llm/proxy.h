// Proxy: brig's placeholder-key LLM proxy, outside every jail. A jail whose
// policy lists llm.routes has one more listener on its own 127.0.0.1
// (policy::kLlmPort), made by its network helper and handed here with the
// placeholder made for that jail. Requests to /<prefix>/... on it are
// checked (the placeholder, compared in constant time, must be the one
// issued to that listener's jail), given the real key in the route's header
// only, and sent to the route's target over verified TLS; the response
// streams back byte for byte (docs/llm.md).
//
// Threads: one accepts on every jail's listener (epoll); each client
// connection is served by a thread of its own with blocking-style waits
// (poll with deadlines), since a connection's life is mostly one long
// streamed response and its steps (resolve, connect, TLS, retry waits,
// stream) read best as straight-line code. A thread costs ~8 MiB of
// address space, little memory; connections per jail and in all are
// capped. The proxy never touches the MCP sessions' loop, and its records
// go to `audit` from these threads.
//
// The real keys live in this object only (Secret: out of core dumps), in
// brig-server or in `brig run` after its jail was cloned.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "server/llm/secret.h"
#include "server/policy/policy.h"

namespace brig::llm {

// One request, for the audit log: never a body, a header or a key.
struct LlmRecord {
  std::string jail;   // the label add_jail was given
  std::string route;  // the prefix ("" when none matched)
  std::string method;
  std::string path;            // as the jail sent it, without the query
  int status = 0;              // the upstream's, or brig's own refusal or failure
  std::string error;           // brig's refusal or failure, as the client was told; "" when relayed
  std::uint64_t bytes_up = 0;  // request body bytes sent upstream
  std::uint64_t bytes_down = 0;  // response bytes (head and body) relayed to the jail
  std::optional<std::chrono::milliseconds> first_byte;  // request received -> first response byte
  std::chrono::milliseconds duration{0};
  int attempts = 0;  // upstream attempts (retries + 1); 0 when refused before any
  std::optional<std::uint64_t> input_tokens;
  std::optional<std::uint64_t> output_tokens;
};

// One line for a person: "anthropic POST /anthropic/v1/messages: 200, 1.2 KiB up, ...".
std::string describe(const LlmRecord& record);

struct ProxyOptions {
  std::size_t max_head = 16 * 1024;                       // 431 past this
  std::size_t max_body = 10 * 1024 * 1024;                // 413 past this (bodies are buffered)
  std::chrono::milliseconds head_timeout{10'000};         // 408: a request head this slow
  std::chrono::milliseconds keep_alive{60'000};           // an idle client connection closes
  std::chrono::milliseconds connect_timeout{10'000};      // 504: resolve + connect + TLS
  std::chrono::milliseconds first_byte_timeout{600'000};  // 504: no response head by then
  std::chrono::milliseconds idle_timeout{300'000};        // a stalled stream is cut
  int max_attempts = 3;  // tries per request: connect errors, 429/503/529
  std::chrono::milliseconds max_retry_wait{30'000};  // all waits before retries together
  std::chrono::milliseconds pool_idle{60'000};       // a pooled upstream connection closes
  std::size_t max_pooled_per_route = 16;
  std::size_t max_connections_per_jail = 256;  // then 503
  std::size_t max_connections = 4096;          // all jails; then 503
  // Called on the connection's thread for every request; must be
  // thread-safe and short.
  std::function<void(const LlmRecord&)> audit;
};

class Proxy {
 public:
  // `routes` are the policy's; `keys` their real keys, in the same order.
  // Fails when a route's target or TLS settings cannot be used (an
  // unreadable ca_file).
  static Result<std::unique_ptr<Proxy>> start(const std::vector<policy::LlmRoute>& routes,
                                              std::vector<Secret> keys, ProxyOptions options);
  // Stops accepting, ends every connection (upstream ones too), and waits
  // for their threads.
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Thread-safe. Serves `listener` (bound, listening) for the jail labelled
  // `jail`, accepting `placeholder` only, until remove_jail.
  std::uint64_t add_jail(std::string jail, std::string placeholder, UniqueFd listener);
  // Thread-safe. Closes the listener and every connection of the jail, both
  // sides, before it returns; its placeholder is refused from then on as one
  // whose jail ended. Unknown ids are ignored.
  void remove_jail(std::uint64_t id);

  // Client connections open now, all jails (for tests).
  std::size_t connections() const;

  struct Impl;  // proxy.cc's; named here for its helpers only

 private:
  explicit Proxy(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// Loads the real key of every route (load_key), in order; the first
// missing one fails, naming its route and variable or file.
Result<std::vector<Secret>> load_keys(const std::vector<policy::LlmRoute>& routes,
                                      const policy::EnvMap& env);

}  // namespace brig::llm
