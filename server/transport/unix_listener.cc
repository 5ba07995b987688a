#include "server/transport/unix_listener.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "jail/base/unique_fd.h"

namespace brig::transport {
namespace {

constexpr std::string_view kScheme = "unix://";

sockaddr_un address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Removes a socket file nobody listens on, so a server that crashed (or was
// SIGKILLed) does not block the next start; refuses to touch anything else.
Result<void> claim_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return std::unexpected(sys_error("inspect the socket path", path, errno));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return std::unexpected(
        Error{"listen", path, "the path exists and is not a socket; not replacing it"});
  }
  // Non-blocking, so a live server with a full accept backlog answers EAGAIN
  // instead of blocking us: that also means "live".
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe) return std::unexpected(sys_error("create a probe socket", path, errno));
  const sockaddr_un addr = address_of(path);
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ||
      errno == EAGAIN || errno == EINPROGRESS) {
    return std::unexpected(Error{"listen", path,
                                 "another server is accepting connections on this socket; stop "
                                 "it or choose another path"});
  }
  if (errno != ECONNREFUSED) {
    return std::unexpected(sys_error("probe the existing socket", path, errno));
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return std::unexpected(sys_error("remove the stale socket", path, errno));
  }
  return {};
}

}  // namespace

Result<std::string> parse_listen_uri(std::string_view uri) {
  if (!uri.starts_with(kScheme)) {
    return std::unexpected(
        Error{"parse --listen", std::string(uri),
              "expected unix:///absolute/path.sock (only Unix sockets are served)"});
  }
  std::string path(uri.substr(kScheme.size()));
  if (path.empty() || path.front() != '/') {
    return std::unexpected(Error{"parse --listen", std::string(uri),
                                 "the socket path must be absolute: unix:///absolute/path.sock"});
  }
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return std::unexpected(Error{"parse --listen", std::string(uri),
                                 fmt::format("the socket path is {} bytes; Unix socket paths must "
                                             "be shorter than {}",
                                             path.size(), sizeof(sockaddr_un::sun_path))});
  }
  if (path.find('\0') != std::string::npos) {
    return std::unexpected(
        Error{"parse --listen", std::string(uri), "the path contains a NUL byte"});
  }
  return path;
}

Result<std::unique_ptr<UnixListener>> UnixListener::open(const asio::any_io_executor& executor,
                                                         const std::string& path, mode_t mode) {
  if (mode > 0777) {
    return std::unexpected(
        Error{"listen", path, fmt::format("socket mode {:o} is not in 0..0777", mode)});
  }
  BRIG_TRY_VOID(claim_path(path));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return std::unexpected(sys_error("create the listening socket", path, errno));
  const sockaddr_un addr = address_of(path);
  // bind() creates the file with 0777 & ~umask: a umask of exactly ~mode
  // gives the requested bits from the first instant. Single-threaded here.
  const mode_t old_umask = ::umask(~mode & 0777);
  const int bound = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(old_umask);
  if (bound != 0) return std::unexpected(sys_error("bind the socket", path, bind_errno));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    return std::unexpected(sys_error("inspect the new socket", path, err));
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    return std::unexpected(sys_error("listen on the socket", path, err));
  }
  asio::local::stream_protocol::acceptor acceptor(executor);
  std::error_code ec;
  acceptor.assign(asio::local::stream_protocol(), fd.get(), ec);
  if (ec) {
    ::unlink(path.c_str());
    return std::unexpected(Error{"watch the socket", path, ec.message(), ec.value()});
  }
  fd.release();
  return std::make_unique<UnixListener>(std::move(acceptor), path, st.st_dev, st.st_ino);
}

UnixListener::UnixListener(asio::local::stream_protocol::acceptor acceptor, std::string path,
                           dev_t dev, ino_t ino)
    : acceptor_(std::move(acceptor)), path_(std::move(path)), dev_(dev), ino_(ino) {}

UnixListener::~UnixListener() {
  close();
}

void UnixListener::close() {
  if (!acceptor_.is_open()) return;
  std::error_code ignored;
  acceptor_.close(ignored);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
}

}  // namespace brig::transport
