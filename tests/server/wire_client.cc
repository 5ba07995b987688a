#include "tests/server/wire_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

extern char** environ;

namespace brig::wire {
namespace {

using Clock = std::chrono::steady_clock;

// Readers discard consumed bytes once this many have piled up at the front.
constexpr std::size_t kCompactBytes = 1 << 20;
constexpr std::size_t kReadChunk = 256 << 10;

}  // namespace

std::string sibling_executable(std::string_view name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / name).string();
}

WireStream::WireStream(UniqueFd read_fd, UniqueFd write_fd, bool socket)
    : read_fd_(std::move(read_fd)), write_fd_(std::move(write_fd)), socket_(socket) {}

std::optional<WireStream> WireStream::connect_unix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return std::nullopt;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return std::nullopt;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return std::nullopt;
  }
  UniqueFd writer(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!writer) return std::nullopt;
  return WireStream(std::move(fd), std::move(writer), true);
}

bool WireStream::write(std::string_view bytes) {
  while (!bytes.empty()) {
    // MSG_NOSIGNAL: a departed server is a test failure, not a SIGPIPE death.
    ssize_t n = socket_ ? ::send(write_fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL)
                        : ::write(write_fd_.get(), bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::optional<std::string> WireStream::read_line(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto newline = buffer_.find('\n', scanned_);
    if (newline != std::string::npos) {
      std::string line = buffer_.substr(start_, newline - start_);
      start_ = scanned_ = newline + 1;
      if (start_ == buffer_.size()) {
        buffer_.clear();
        start_ = scanned_ = 0;
      } else if (start_ >= kCompactBytes) {
        buffer_.erase(0, start_);
        scanned_ -= start_;
        start_ = 0;
      }
      return line;
    }
    scanned_ = buffer_.size();
    if (eof_) return std::nullopt;

    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return std::nullopt;
    pollfd pfd{read_fd_.get(), POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;

    std::size_t old = buffer_.size();
    buffer_.resize(old + kReadChunk);
    ssize_t n = ::read(read_fd_.get(), buffer_.data() + old, kReadChunk);
    buffer_.resize(old + static_cast<std::size_t>(n > 0 ? n : 0));
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) eof_ = true;
  }
}

void WireStream::close_write() {
  if (socket_) {
    ::shutdown(write_fd_.get(), SHUT_WR);
  } else {
    write_fd_.reset();
  }
}

std::optional<ServerProcess> ServerProcess::start(const std::string& exe,
                                                  const std::vector<std::string>& args, bool pipes,
                                                  bool quiet) {
  // A server that dies mid-write must fail the test, not kill it.
  ::signal(SIGPIPE, SIG_IGN);

  int to_child[2] = {-1, -1};
  int from_child[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (pipes) {
    if (::pipe2(to_child, O_CLOEXEC) != 0) return std::nullopt;
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
      ::close(to_child[0]);
      ::close(to_child[1]);
      return std::nullopt;
    }
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  }
  if (quiet) posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);

  std::optional<WireStream> stream;
  if (pipes) {
    ::close(to_child[0]);
    ::close(from_child[1]);
    stream.emplace(UniqueFd(from_child[0]), UniqueFd(to_child[1]), false);
  }
  if (rc != 0) return std::nullopt;
  return ServerProcess(pid, std::move(stream));
}

ServerProcess::ServerProcess(pid_t pid, std::optional<WireStream> stream)
    : pid_(pid), stream_(std::move(stream)) {}

ServerProcess::ServerProcess(ServerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      status_(other.status_),
      stream_(std::move(other.stream_)) {}

ServerProcess::~ServerProcess() {
  if (pid_ <= 0 || status_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

std::optional<int> ServerProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      return status_;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool wait_for_socket(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (WireStream::connect_unix(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string make_temp_dir() {
  std::string tmpl = "/tmp/brig-wire.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return {};
  return tmpl;
}

}  // namespace brig::wire
