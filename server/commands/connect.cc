#include "server/commands/connect.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "jail/base/unique_fd.h"
#include "server/policy/policy.h"

namespace brig::commands {
namespace {

// The proxy's answer ends at its empty line; a bigger head is not brig's.
constexpr std::size_t kMaxHead = 16 * 1024;

int connect_failed(const std::string& why) {
  fmt::print(stderr, "brig connect: {}\n", why);
  return 1;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads the proxy's response head a byte at a time: what follows it is the
// upstream's, and must go to stdout, not be swallowed here.
bool read_head(int fd, std::string& head) {
  while (head.size() < kMaxHead && !head.ends_with("\r\n\r\n")) {
    char c;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    head.push_back(c);
  }
  return head.ends_with("\r\n\r\n");
}

// Copies one chunk from `from` to `to`; false at EOF or on an error.
bool pump(int from, int to) {
  char buf[64 * 1024];
  ssize_t n;
  do n = ::read(from, buf, sizeof buf);
  while (n < 0 && errno == EINTR);
  return n > 0 && write_all(to, buf, static_cast<std::size_t>(n));
}

}  // namespace

CLI::App* add_connect_command(CLI::App& app, ConnectOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "connect",
      "Join stdin and stdout to HOST:PORT through the egress proxy of the `proxy` jail this "
      "runs in (ssh's ProxyCommand: GIT_SSH_COMMAND there names it)");
  cmd->add_option("host", o.host, "The host the policy's network.allow names")->required();
  cmd->add_option("port", o.port, "Its port")->required()->check(CLI::Range(1, 65535));
  return cmd;
}

int run_connect(const ConnectOptions& o) {
  UniqueFd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return connect_failed(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in proxy{};
  proxy.sin_family = AF_INET;
  proxy.sin_port = htons(policy::kProxyPort);
  proxy.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&proxy), sizeof proxy) != 0)
    return connect_failed(
        fmt::format("no egress proxy on 127.0.0.1:{} ({}): this runs in a jail whose "
                    "policy has network.mode = \"proxy\"",
                    policy::kProxyPort, std::strerror(errno)));
  // An IPv6 literal goes in brackets, as in any authority.
  const std::string authority = o.host.find(':') != std::string::npos && !o.host.starts_with('[')
                                    ? fmt::format("[{}]:{}", o.host, o.port)
                                    : fmt::format("{}:{}", o.host, o.port);
  const std::string request = fmt::format("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", authority);
  if (!write_all(sock.get(), request.data(), request.size()))
    return connect_failed(fmt::format("send the request: {}", std::strerror(errno)));
  std::string head;
  if (!read_head(sock.get(), head)) return connect_failed("the proxy closed without an answer");
  const std::string_view status_line = std::string_view(head).substr(0, head.find("\r\n"));
  if (!status_line.starts_with("HTTP/1.1 200") && !status_line.starts_with("HTTP/1.0 200")) {
    // The refusal's body names the rule and the line that would allow it.
    while (pump(sock.get(), STDERR_FILENO)) {
    }
    return connect_failed(fmt::format("{} refused: {}", authority, status_line));
  }

  pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {sock.get(), POLLIN, 0}};
  while (fds[1].fd >= 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return connect_failed(fmt::format("poll: {}", std::strerror(errno)));
    }
    if (fds[0].revents != 0 && !pump(STDIN_FILENO, sock.get())) {
      // ssh is done sending: the upstream sees EOF, and may still answer.
      ::shutdown(sock.get(), SHUT_WR);
      fds[0].fd = -1;
    }
    if (fds[1].revents != 0 && !pump(sock.get(), STDOUT_FILENO)) fds[1].fd = -1;
  }
  return 0;
}

}  // namespace brig::commands
