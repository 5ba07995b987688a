#include "tests/security/egress_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "tests/security/security_support.h"

namespace brig::security::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Reads and writes on a served connection give up after this: the peer is
// the egress proxy, and a test must end even when the proxy stalls.
constexpr auto kIoLimit = 10s;

// A socket of `type` bound to 127.0.0.1 on a port the kernel picks; the port
// goes to *port (0 on failure).
UniqueFd bind_loopback(int type, int* port) {
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  *port = 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) return UniqueFd();
  if (type == SOCK_STREAM && ::listen(fd.get(), 64) != 0) return UniqueFd();
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return UniqueFd();
  *port = ntohs(a.sin_port);
  return fd;
}

bool send_all(int fd, std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, ms_until(deadline)) <= 0) return false;
  }
  return true;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The path of a request target: origin-form ("/a?b") or absolute-form
// ("http://host:port/a?b"), without its query or fragment.
std::string target_path(std::string_view target) {
  if (const size_t scheme = target.find("://"); scheme != std::string_view::npos) {
    const size_t slash = target.find('/', scheme + 3);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  return std::string(target.substr(0, target.find_first_of("?#")));
}

}  // namespace

bool HostRan::ok() const {
  return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

HostRan host_command(const std::vector<std::string>& argv, const std::string& cwd,
                     const std::vector<std::string>& env, std::chrono::seconds limit) {
  HostRan ran;
  UniqueFd out(::memfd_create("host-command", MFD_CLOEXEC));
  // Built before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> args = argv, vars = env;
  std::vector<char*> cargv, cenv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : vars) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  if (!out || cargv.size() < 2) return ran;
  const pid_t pid = ::fork();
  if (pid < 0) return ran;
  if (pid == 0) {
    // Its own process group, so that a deadline kills the helpers git
    // starts too (all of them started by this test).
    ::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(out.get(), 1) < 0 || ::dup2(out.get(), 2) < 0 ||
        ::chdir(cwd.c_str()) != 0)
      ::_exit(120);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  const auto deadline = Clock::now() + limit;
  int st = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &st, WNOHANG)) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  if (done == 0) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  } else {
    ran.status = st;
  }
  std::string text(static_cast<size_t>(std::max<off_t>(0, ::lseek(out.get(), 0, SEEK_END))), '\0');
  const ssize_t n = ::pread(out.get(), text.data(), text.size(), 0);
  text.resize(static_cast<size_t>(std::max<ssize_t>(0, n)));
  ran.output = std::move(text);
  return ran;
}

LoopbackHttpServer::LoopbackHttpServer(std::string root)
    : root_(std::move(root)), stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  listener_ = bind_loopback(SOCK_STREAM, &port_);
  if (listener_ && stop_) acceptor_ = std::thread([this] { accept_loop(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
  const uint64_t one = 1;
  if (stop_) (void)!::write(stop_.get(), &one, sizeof one);
  if (acceptor_.joinable()) acceptor_.join();
  // No new worker after the acceptor ended; each ends within kIoLimit.
  for (std::thread& t : workers_) t.join();
}

std::vector<std::string> LoopbackHttpServer::paths() const {
  std::lock_guard lock(mutex_);
  return paths_;
}

std::size_t LoopbackHttpServer::requests_for(const std::string& path) const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count(paths_.begin(), paths_.end(), path));
}

void LoopbackHttpServer::accept_loop() {
  for (;;) {
    pollfd p[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn) continue;
    connections_.fetch_add(1);
    std::lock_guard lock(mutex_);
    workers_.emplace_back([this, c = std::move(conn)]() mutable { serve(std::move(c)); });
  }
}

void LoopbackHttpServer::serve(UniqueFd conn) {
  const auto deadline = Clock::now() + kIoLimit;
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 64 * 1024) {
    pollfd p{conn.get(), POLLIN, 0};
    if (::poll(&p, 1, ms_until(deadline)) <= 0) return;
    const ssize_t n = ::recv(conn.get(), buf, sizeof buf, 0);
    if (n == 0) return;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return;
    }
    head.append(buf, static_cast<size_t>(n));
  }
  // "METHOD TARGET VERSION"
  const std::string line = head.substr(0, head.find("\r\n"));
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string::npos || sp2 <= sp1) return;
  const std::string method = line.substr(0, sp1);
  const std::string path = target_path(std::string_view(line).substr(sp1 + 1, sp2 - sp1 - 1));
  {
    std::lock_guard lock(mutex_);
    paths_.push_back(path);
  }
  std::string body;
  std::string status = "404 Not Found";
  // A directory's index.html, as package indexes (pip's "simple" API) are
  // laid out; pip reads only pages served as text/html.
  const std::string file = path.ends_with('/') ? path + "index.html" : path;
  const char* type = file.ends_with(".html") ? "text/html" : "application/octet-stream";
  struct stat st {};
  if (file.starts_with("/") && file.find("..") == std::string::npos &&
      ::stat((root_ + file).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    status = "200 OK";
    body = read_whole_file(root_ + file);
  }
  std::string reply = "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
                      "\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\nConnection: close\r\n\r\n";
  if (method != "HEAD") reply += body;
  if (send_all(conn.get(), reply, Clock::now() + kIoLimit)) ::shutdown(conn.get(), SHUT_WR);
}

LoopbackTally::LoopbackTally() {
  tcp_ = bind_loopback(SOCK_STREAM, &tcp_port_);
  udp_ = bind_loopback(SOCK_DGRAM, &udp_port_);
}

std::size_t LoopbackTally::tcp_arrivals() {
  std::size_t n = 0;
  while (UniqueFd(::accept4(tcp_.get(), nullptr, nullptr, SOCK_CLOEXEC))) ++n;
  return n;
}

std::size_t LoopbackTally::udp_arrivals() {
  std::size_t n = 0;
  char buf[2048];
  while (::recv(udp_.get(), buf, sizeof buf, 0) >= 0) ++n;
  return n;
}

TlsServer::TlsServer(std::string dir, const std::string& name) : dir_(std::move(dir)) {
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + dir_};
  // EC: a key in milliseconds, where RSA takes long enough to show in a test's time.
  const HostRan req = host_command(
      {"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
       "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-subj",
       "/CN=" + name, "-addext", "subjectAltName=DNS:" + name, "-days", "2"},
      dir_, env);
  if (!req.ok()) {
    error_ = "openssl req: " + req.output;
    return;
  }
  std::vector<std::string> args = {
      "/usr/bin/openssl", "s_server", "-accept", "127.0.0.1:0", "-cert",
      "cert.pem",         "-key",     "key.pem", "-WWW"};
  std::vector<std::string> vars = env;
  std::vector<char*> cargv, cenv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : vars) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  // A file, not a pipe: s_server writes as it pleases and must never block
  // on a reader the test does not have.
  const std::string out_path = dir_ + "/s_server.out";
  UniqueFd out(::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out) {
    error_ = "open " + out_path + ": " + std::strerror(errno);
    return;
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    return;
  }
  if (pid_ == 0) {
    const int null = ::open("/dev/null", O_RDONLY);
    if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(out.get(), 1) < 0 || ::dup2(out.get(), 2) < 0 ||
        ::chdir(dir_.c_str()) != 0)
      ::_exit(120);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  // s_server names the port it bound: "ACCEPT 127.0.0.1:PORT".
  const auto deadline = Clock::now() + 20s;
  const std::string prefix = "ACCEPT 127.0.0.1:";
  std::string text;
  while (Clock::now() < deadline) {
    text = read_whole_file(out_path);
    if (const size_t at = text.find(prefix); at != std::string::npos) {
      const size_t end = text.find('\n', at);
      if (end != std::string::npos) {
        port_ = std::atoi(text.substr(at + prefix.size(), end - at - prefix.size()).c_str());
        return;
      }
    }
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  error_ = "openssl s_server did not start: " + text;
  stop();
}

void TlsServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace brig::security::test
