// A private network for the `filtered` tests, made only of network
// namespaces the test creates (never the machine's own network):
//
//   host ns ("the host" brig runs in)        upstream ns ("the internet")
//   lo, ip_forward = 1                        lo
//   ups0 10.77.0.1/24  <------ veth ------>   eth0 10.77.0.2/24, .3/24, .4/24
//                                             default via 10.77.0.1
//
// brig runs in the host namespace (its veth `brig<N>`, masquerade and
// nftables table go there); the servers listen in the upstream one, reached
// through the host namespace's forwarding. The namespaces are held by file
// descriptors of the test process and end with them, and with the sockets
// and processes in them.
//
// Servers count what reaches them, so a test tells "refused" from "never
// tried", and record the peer address, so a test sees the masquerade.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "jail/base/unique_fd.h"
#include "tests/security/egress_servers.h"

namespace brig::security::test {

// The calling thread in network namespace `ns` (an fd of /proc/*/ns/net)
// until destruction, then back in the one it was in. Threads started and
// processes forked meanwhile from this thread are in `ns`; a socket made
// meanwhile stays in `ns` for its life.
class InNetns {
 public:
  explicit InNetns(int ns);
  ~InNetns();
  InNetns(const InNetns&) = delete;
  InNetns& operator=(const InNetns&) = delete;
  bool ok() const { return ok_; }

 private:
  UniqueFd back_;
  bool ok_ = false;
};

// An HTTP server on addr:port, in the network namespace of the calling
// thread: every request gets `body` (200, Connection: close). One thread
// serves one connection at a time with bounded reads and writes.
class CountingHttpServer {
 public:
  CountingHttpServer(const std::string& addr, int port, std::string body);
  ~CountingHttpServer();  // stops and joins
  CountingHttpServer(const CountingHttpServer&) = delete;
  CountingHttpServer& operator=(const CountingHttpServer&) = delete;

  bool ok() const { return static_cast<bool>(listener_); }
  const std::string& error() const { return error_; }
  std::size_t connections() const { return connections_.load(); }
  std::size_t requests() const { return requests_.load(); }
  // The source address of each connection accepted, in order.
  std::vector<std::string> peers() const;

 private:
  void loop();

  std::string body_;
  std::string error_;
  UniqueFd listener_;
  UniqueFd stop_;
  std::atomic<std::size_t> connections_{0};
  std::atomic<std::size_t> requests_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> peers_;
  std::thread thread_;
};

// A TCP listener or UDP socket on addr:port (in the calling thread's
// network namespace; IPv6 if addr has a colon) that nobody serves: it only
// counts what arrives.
class Tally {
 public:
  enum class Kind { tcp, udp };
  Tally(Kind kind, const std::string& addr, int port);
  bool ok() const { return static_cast<bool>(fd_); }
  const std::string& error() const { return error_; }
  // Connections or datagrams that arrived since the last call (taken off).
  std::size_t arrivals();

 private:
  Kind kind_;
  UniqueFd fd_;
  std::string error_;
};

// The two namespaces and the veth between them, as drawn above. Made by
// the constructor, on the calling thread (which must stay where it was:
// each namespace is entered and left again); error() is empty when all of
// it worked.
class TestNetwork {
 public:
  static constexpr const char* kHostAddr = "10.77.0.1";
  static constexpr const char* kUpstreamLink = "ups0";  // the host side of the veth

  TestNetwork();
  const std::string& error() const { return error_; }

  int host_ns() const { return host_.get(); }
  int upstream_ns() const { return upstream_.get(); }

  // argv (argv[0] a path) run in the host / upstream namespace, PATH with
  // the sbin directories, stdin /dev/null, at most 30 s.
  HostRan in_host(const std::vector<std::string>& argv) const;
  HostRan in_upstream(const std::vector<std::string>& argv) const;
  // `/bin/sh -c script` in the host namespace.
  HostRan host_sh(const std::string& script) const { return in_host({"/bin/sh", "-c", script}); }

  // net.ipv4.ip_forward of the host namespace.
  bool set_ip_forward(bool on) const;
  std::string ip_forward() const;

 private:
  UniqueFd host_;
  UniqueFd upstream_;
  std::string error_;
};

}  // namespace brig::security::test
