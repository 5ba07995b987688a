// The hosts behind the egress tests, all on the host's 127.0.0.1 (never any
// other address): a static HTTP file server in threads of the test (enough
// for curl and git's dumb HTTP protocol), sockets that count what arrives
// (the proof a direct connection never got out), and `openssl s_server`
// with a self-signed certificate. Each reports what reached it, so a test
// can tell "the jail was refused" from "the jail never tried".
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "jail/base/unique_fd.h"

namespace brig::security::test {

// What a host command did: its wait status (-1: killed at the deadline or
// not started) and its stdout and stderr together.
struct HostRan {
  int status = -1;
  std::string output;
  bool ok() const;  // exited 0
};

// Runs argv (argv[0] a path) in `cwd` with exactly `env`, stdin /dev/null,
// for at most `limit`; killed (by its pid) and reaped at the deadline.
HostRan host_command(const std::vector<std::string>& argv, const std::string& cwd,
                     const std::vector<std::string>& env,
                     std::chrono::seconds limit = std::chrono::seconds(30));

// Serves the regular files under `root` on 127.0.0.1:port(): GET and HEAD,
// origin-form or absolute-form targets (a proxy may forward either), the
// query ignored (git asks for info/refs?service=…), one request per
// connection (Connection: close). Every connection gets a thread with
// bounded reads and writes, so a stalled peer never stalls the test.
class LoopbackHttpServer {
 public:
  explicit LoopbackHttpServer(std::string root);
  ~LoopbackHttpServer();  // stops accepting and joins every thread
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  int port() const { return port_; }  // 0 if it could not listen
  // Connections accepted so far (whether or not they sent a request).
  std::size_t connections() const { return connections_.load(); }
  // The paths requested so far ("/file", "/repo.git/info/refs"), in order.
  std::vector<std::string> paths() const;
  // How many requests asked for `path`.
  std::size_t requests_for(const std::string& path) const;

 private:
  void accept_loop();
  void serve(UniqueFd conn);

  std::string root_;
  UniqueFd listener_;
  UniqueFd stop_;  // an eventfd the accept loop polls with the listener
  int port_ = 0;
  std::atomic<std::size_t> connections_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> paths_;
  std::vector<std::thread> workers_;  // guarded by mutex_
  std::thread acceptor_;
};

// A TCP listener and a UDP socket on 127.0.0.1 that nobody serves: they
// only count what arrives. Ports are the kernel's choice.
class LoopbackTally {
 public:
  LoopbackTally();
  int tcp_port() const { return tcp_port_; }
  int udp_port() const { return udp_port_; }
  // Connections waiting in the TCP backlog since the last call (taken off).
  std::size_t tcp_arrivals();
  // Datagrams that arrived since the last call (read and dropped).
  std::size_t udp_arrivals();

 private:
  UniqueFd tcp_;
  UniqueFd udp_;
  int tcp_port_ = 0;
  int udp_port_ = 0;
};

// `openssl s_server -WWW` on 127.0.0.1 serving `dir`, with a fresh
// self-signed EC certificate for `name` (written to cert_path(), which a
// client passes as --cacert). Killed by its pid and reaped by stop() or at
// destruction; stop() it before a leftover check that counts children.
class TlsServer {
 public:
  TlsServer(std::string dir, const std::string& name);
  ~TlsServer() { stop(); }
  TlsServer(const TlsServer&) = delete;
  TlsServer& operator=(const TlsServer&) = delete;

  int port() const { return port_; }  // 0 if it did not start
  const std::string& error() const { return error_; }
  std::string cert_path() const { return dir_ + "/cert.pem"; }
  void stop();

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string error_;
};

}  // namespace brig::security::test
