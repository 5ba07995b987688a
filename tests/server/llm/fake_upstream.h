// A fake LLM provider for the proxy's tests, on 127.0.0.1 only: HTTP, or
// HTTPS with a certificate from a CA the test makes with OpenSSL at run
// time. It records every request head it gets and answers by path:
//   /v1/messages      an SSE stream of three events, `pause` apart (usage in them)
//   /v1/json          a JSON body with Content-Length (OpenAI usage fields)
//   /v1/flaky         429 (Retry-After: 0) for the first `failures` requests, then 200
//   /v1/busy          503 always
//   /v1/later         429 with Retry-After: 3600
//   /v1/stall         reads the request, never answers
//   /v1/stall-stream  sends the head and one event, then nothing
//   /v1/endless       an event every 20 ms until the client goes (counted in `cut_streams`)
//   /v1/reset         closes the connection at once, without an answer
//   anything else     200 "ok" echoing the body
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "jail/base/unique_fd.h"

namespace brig::llm::testing {

// A CA and a server certificate for 127.0.0.1 it signed, made at run time.
struct TestPki {
  std::string ca_pem;    // the CA certificate
  std::string cert_pem;  // the server's, for IP 127.0.0.1 only
  std::string key_pem;   // the server's private key
  static TestPki make();
};

struct SeenRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // lower-case names; a repeated one joined by ", "
  std::string head;                            // as received
  std::string body;
};

class FakeUpstream {
 public:
  // tls: serve HTTPS with `pki`'s server certificate.
  explicit FakeUpstream(const TestPki* pki = nullptr);
  ~FakeUpstream();

  std::uint16_t port() const { return port_; }
  std::vector<SeenRequest> requests();
  int connections() const { return connections_.load(); }
  int cut_streams() const { return cut_streams_.load(); }

  std::chrono::milliseconds pause{300};
  std::atomic<int> failures{2};

 private:
  void accept_loop();
  void serve(int fd);
  UniqueFd listener_;
  std::uint16_t port_ = 0;
  SSL_CTX* ctx_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> cut_streams_{0};
  std::atomic<int> active_{0};
  std::mutex mu_;
  std::vector<SeenRequest> seen_;
  std::vector<int> open_fds_;  // under mu_: shut down when the fake stops
  std::thread thread_;
};

}  // namespace brig::llm::testing
