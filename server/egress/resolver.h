// Resolver: c-ares on the relay's epoll loop. Asynchronous, so one slow or
// silent name server never stalls the other jails' traffic, and without
// getaddrinfo, which a static `brig` could not use (it needs NSS).
// Not thread-safe: the relay's thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "server/policy/net_rules.h"

namespace brig::egress {

class Resolver {
 public:
  enum class Status {
    ok,        // addresses holds at least one
    no_data,   // the name exists but has no address of the family
    nxdomain,  // the name does not exist
    failed,    // the name servers failed, timed out or were unreachable
  };
  struct Answer {
    std::uint64_t id = 0;
    Status status = Status::failed;
    std::vector<policy::Address> addresses;
    std::uint32_t ttl = 0;  // the smallest of the records'
  };
  // The loop's interest in one of c-ares's sockets; neither: forget it.
  using Watch = std::function<void(int fd, bool readable, bool writable)>;

  // servers: "127.0.0.1:5353", "[::1]:53"; empty: the host's resolv.conf.
  static Result<std::unique_ptr<Resolver>> create(const std::vector<std::string>& servers,
                                                  Watch watch);
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // family: AF_INET, AF_INET6 or AF_UNSPEC. The answer comes back through
  // take_answers(), never from inside this call, so a caller may start a
  // lookup in the middle of changing its own state.
  void lookup(std::uint64_t id, const std::string& name, int family);
  // A socket's readiness, or (fd -1) only the expired timeouts.
  void process(int fd, bool readable, bool writable);
  // Until c-ares must look at its timeouts; nullopt while nothing is asked.
  std::optional<std::chrono::milliseconds> timeout() const;
  std::vector<Answer> take_answers();

 private:
  struct Impl;
  explicit Resolver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace brig::egress
