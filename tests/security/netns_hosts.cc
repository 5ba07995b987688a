#include "tests/security/netns_hosts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "tests/security/security_support.h"

namespace brig::security::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kHostIoLimit = 10s;

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

UniqueFd open_own_netns() {
  return UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
}

// Back to `back` or nowhere: a thread left in a test namespace would run
// the rest of the suite there.
void return_to(int back) {
  if (::setns(back, CLONE_NEWNET) != 0) {
    std::perror("netns_hosts: setns back to the test's own network namespace");
    std::abort();
  }
}

// A new network namespace, held by the fd returned; the calling thread
// stays in its own.
UniqueFd new_netns(std::string* error) {
  UniqueFd back = open_own_netns();
  if (!back) {
    *error = errno_text("open /proc/thread-self/ns/net");
    return UniqueFd();
  }
  if (::unshare(CLONE_NEWNET) != 0) {
    *error = errno_text("unshare(CLONE_NEWNET)");
    return UniqueFd();
  }
  UniqueFd made = open_own_netns();
  const int saved = errno;
  return_to(back.get());
  if (!made) {
    errno = saved;
    *error = errno_text("open the new network namespace");
  }
  return made;
}

// A socket of `type` bound to addr:port (SO_REUSEADDR), listening if TCP.
// An address with a colon is IPv6 (IPv6 only: no IPv4-mapped traffic).
UniqueFd bind_at(int type, const std::string& addr, int port, std::string* error) {
  const bool v6 = addr.find(':') != std::string::npos;
  UniqueFd fd(::socket(v6 ? AF_INET6 : AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_storage storage{};
  socklen_t len = 0;
  int parsed = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    parsed = ::inet_pton(AF_INET6, addr.c_str(), &a->sin6_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    parsed = ::inet_pton(AF_INET, addr.c_str(), &a->sin_addr);
    len = sizeof *a;
  }
  const std::string where = addr + " port " + std::to_string(port);
  if (parsed != 1) {
    *error = "not an IP address: " + addr;
    return UniqueFd();
  }
  const int one = 1;
  if (!fd || ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      (v6 && ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
      ::bind(fd.get(), reinterpret_cast<sockaddr*>(&storage), len) != 0) {
    *error = errno_text("bind " + where);
    return UniqueFd();
  }
  if (type == SOCK_STREAM && ::listen(fd.get(), 64) != 0) {
    *error = errno_text("listen " + where);
    return UniqueFd();
  }
  return fd;
}

const std::vector<std::string> kCommandEnv = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"};

}  // namespace

InNetns::InNetns(int ns) : back_(open_own_netns()) {
  ok_ = back_ && ::setns(ns, CLONE_NEWNET) == 0;
}

InNetns::~InNetns() {
  if (ok_) return_to(back_.get());
}

CountingHttpServer::CountingHttpServer(const std::string& addr, int port, std::string body)
    : body_(std::move(body)), stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  listener_ = bind_at(SOCK_STREAM, addr, port, &error_);
  if (listener_ && stop_) thread_ = std::thread([this] { loop(); });
}

CountingHttpServer::~CountingHttpServer() {
  const uint64_t one = 1;
  if (stop_) (void)!::write(stop_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> CountingHttpServer::peers() const {
  std::lock_guard lock(mutex_);
  return peers_;
}

void CountingHttpServer::loop() {
  for (;;) {
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    UniqueFd conn(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &len,
                            SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn) continue;
    char text[INET_ADDRSTRLEN] = "";
    ::inet_ntop(AF_INET, &peer.sin_addr, text, sizeof text);
    {
      std::lock_guard lock(mutex_);
      peers_.push_back(text);
    }
    connections_.fetch_add(1);
    // The head, then the answer; a silent peer is dropped at the deadline.
    const auto deadline = Clock::now() + kHostIoLimit;
    std::string head;
    char buf[4096];
    bool complete = false;
    while (!complete && head.size() < 64 * 1024) {
      pollfd c{conn.get(), POLLIN, 0};
      pollfd w[2] = {c, {stop_.get(), POLLIN, 0}};
      if (::poll(w, 2, ms_until(deadline)) <= 0 || w[1].revents) break;
      const ssize_t n = ::recv(conn.get(), buf, sizeof buf, 0);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        break;
      }
      head.append(buf, static_cast<size_t>(n));
      complete = head.find("\r\n\r\n") != std::string::npos;
    }
    if (!complete) continue;
    requests_.fetch_add(1);
    std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                        std::to_string(body_.size()) + "\r\nConnection: close\r\n\r\n" + body_;
    std::string_view left = reply;
    while (!left.empty()) {
      const ssize_t n = ::send(conn.get(), left.data(), left.size(), MSG_NOSIGNAL);
      if (n > 0) {
        left.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) break;
      pollfd c{conn.get(), POLLOUT, 0};
      if (::poll(&c, 1, ms_until(deadline)) <= 0) break;
    }
    ::shutdown(conn.get(), SHUT_WR);
  }
}

Tally::Tally(Kind kind, const std::string& addr, int port) : kind_(kind) {
  fd_ = bind_at(kind == Kind::tcp ? SOCK_STREAM : SOCK_DGRAM, addr, port, &error_);
}

std::size_t Tally::arrivals() {
  std::size_t n = 0;
  if (kind_ == Kind::tcp) {
    while (UniqueFd(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC))) ++n;
  } else {
    char buf[2048];
    while (::recv(fd_.get(), buf, sizeof buf, 0) >= 0) ++n;
  }
  return n;
}

TestNetwork::TestNetwork() {
  host_ = new_netns(&error_);
  if (!host_) return;
  upstream_ = new_netns(&error_);
  if (!upstream_) return;
  // The peer goes straight into the upstream namespace, named by a path
  // (ip opens a netns argument with a slash as a file).
  const std::string upstream_path =
      "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(upstream_.get());
  const HostRan host =
      host_sh(std::string("set -e\nip link set lo up\n") + "ip link add " + kUpstreamLink +
              " type veth peer name eth0 netns " + upstream_path + "\n" + "ip addr add " +
              kHostAddr + "/24 dev " + kUpstreamLink + "\nip link set " + kUpstreamLink + " up\n");
  if (!host.ok()) {
    error_ = "setting up the host namespace: " + host.output;
    return;
  }
  const HostRan up =
      in_upstream({"/bin/sh", "-c",
                   "set -e\nip link set lo up\nip addr add 10.77.0.2/24 dev eth0\n"
                   "ip addr add 10.77.0.3/24 dev eth0\nip addr add 10.77.0.4/24 dev eth0\n"
                   "ip link set eth0 up\nip route add default via " +
                       std::string(kHostAddr) + "\n"});
  if (!up.ok()) {
    error_ = "setting up the upstream namespace: " + up.output;
    return;
  }
  if (!set_ip_forward(true)) error_ = "net.ipv4.ip_forward = 1 in the host namespace failed";
}

HostRan TestNetwork::in_host(const std::vector<std::string>& argv) const {
  InNetns in(host_.get());
  if (!in.ok()) return HostRan{-1, errno_text("setns into the host namespace")};
  return host_command(argv, "/", kCommandEnv);
}

HostRan TestNetwork::in_upstream(const std::vector<std::string>& argv) const {
  InNetns in(upstream_.get());
  if (!in.ok()) return HostRan{-1, errno_text("setns into the upstream namespace")};
  return host_command(argv, "/", kCommandEnv);
}

bool TestNetwork::set_ip_forward(bool on) const {
  // A command of its own: /proc/sys/net shows the namespace of the process
  // that opens it.
  return host_sh(std::string("echo ") + (on ? "1" : "0") + " > /proc/sys/net/ipv4/ip_forward")
             .ok() &&
         ip_forward() == (on ? "1" : "0");
}

std::string TestNetwork::ip_forward() const {
  std::string out = in_host({"/bin/cat", "/proc/sys/net/ipv4/ip_forward"}).output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace brig::security::test
