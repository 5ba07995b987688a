#include "tests/server/test_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace brig::server::testing {
namespace {

using Clock = std::chrono::steady_clock;

// A test that writes to a server that has exited must see EPIPE, not die.
const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

std::string sibling_binary(std::string_view name) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("readlink /proc/self/exe failed");
  std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + std::string(name);
}

std::vector<pid_t> pids_with_cmdline(std::string_view needle) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
    if (pid <= 0) continue;
    const std::string path = "/proc/" + std::string(e->d_name) + "/cmdline";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string cmdline;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) cmdline.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!cond()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

TempDir::TempDir(const std::string& parent) {
  std::string tmpl = parent + "/brig-t-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  ::chmod(path_.c_str(), 0755);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

LineClient::LineClient(UniqueFd in, UniqueFd out) : in_(std::move(in)), out_(std::move(out)) {}

bool LineClient::send(const Json& message) {
  return send_raw(protocol::encode(message) + "\n");
}

bool LineClient::send_raw(std::string_view bytes) {
  const int fd = out_ ? out_.get() : in_.get();
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) {
      const ssize_t w = ::write(fd, bytes.data(), bytes.size());
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(w));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::optional<Json> LineClient::read(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    // A multi-megabyte reply comes in many reads: scanning it from its
    // start after each one made reading it quadratic.
    if (const auto nl = buffer_.find('\n', scanned_); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      scanned_ = 0;
      Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        bad_line_ = line;
        return std::nullopt;
      }
      return j;
    }
    scanned_ = buffer_.size();
    if (eof_) return std::nullopt;
    pollfd p{in_.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char chunk[65536];
    const ssize_t n = ::read(in_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      continue;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

std::optional<Json> LineClient::read_response(const Json& id, std::vector<Json>* others,
                                              std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    std::optional<Json> m = read(std::chrono::milliseconds(remaining_ms(deadline)));
    if (!m) return std::nullopt;
    if (m->contains("id") && (*m)["id"] == id && !m->contains("method")) return m;
    if (others != nullptr) others->push_back(std::move(*m));
  }
  return std::nullopt;
}

void LineClient::close_write() {
  if (out_) {
    out_.reset();
  } else {
    ::shutdown(in_.get(), SHUT_WR);
  }
}

void LineClient::close_read() {
  in_.reset();
  eof_ = true;
}

UniqueFd connect_unix(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fd;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return UniqueFd();
  }
  return fd;
}

Json initialize_request(const Json& id) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "initialize"},
          {"params",
           {{"protocolVersion", "2025-11-25"},
            {"capabilities", Json::object()},
            {"clientInfo", {{"name", "brig-server-tests"}, {"version", "1"}}}}}};
}

Json initialized_notification() {
  return {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
}

bool initialize(LineClient& client) {
  if (!client.send(initialize_request("init"))) return false;
  auto answer = client.read_response("init");
  if (!answer || !answer->contains("result")) return false;
  return client.send(initialized_notification());
}

Json tool_call(const Json& id, std::string_view tool, Json arguments,
               std::optional<Json> progress_token) {
  Json params = {{"name", tool}, {"arguments", std::move(arguments)}};
  if (progress_token) params["_meta"] = {{"progressToken", *progress_token}};
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", std::move(params)}};
}

Json cancel_notification(const Json& id) {
  return {{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"requestId", id}, {"reason", "test"}}}};
}

Child::Child(const std::vector<std::string>& argv, Options options) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();

  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // Only async-signal-safe calls between fork and exec: the test process
    // may run threads.
    // SIGPIPE as a real client leaves it, at its default: this process
    // ignores it, and an ignored signal stays ignored across execve, which
    // would hide a program that forgot to ignore it itself.
    ::signal(SIGPIPE, SIG_DFL);
    if (options.close_stdin) {
      ::close(0);
    } else {
      ::dup2(in[0], 0);
    }
    ::dup2(out[1], 1);
    if (options.close_stderr) {
      ::close(2);
    } else {
      ::dup2(err[1], 2);
    }
    if (cwd != nullptr && ::chdir(cwd) != 0) ::_exit(126);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  stdin_.reset(in[1]);
  stdout_.reset(out[0]);
  stderr_.reset(err[0]);
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

LineClient Child::take_client() {
  return LineClient(std::move(stdout_), std::move(stdin_));
}

std::optional<int> Child::wait(std::chrono::milliseconds timeout) {
  int status = 0;
  const bool exited = wait_until(
      [&] {
        const pid_t r = ::waitpid(pid_, &status, WNOHANG);
        return r == pid_;
      },
      timeout);
  if (!exited) return std::nullopt;
  reaped_ = true;
  return status;
}

bool exited_zero(const std::optional<int>& status) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

namespace {

std::string read_until_eof(const UniqueFd& fd, std::chrono::milliseconds timeout) {
  std::string text;
  const auto deadline = Clock::now() + timeout;
  while (fd) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) <= 0) break;
    char chunk[4096];
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n <= 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace

bool Child::write_stdin_and_close(std::string_view bytes) {
  bool ok = true;
  while (ok && !bytes.empty()) {
    const ssize_t n = ::write(stdin_.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  stdin_.reset();
  return ok;
}

std::string Child::read_stdout(std::chrono::milliseconds timeout) {
  return read_until_eof(stdout_, timeout);
}

std::string Child::read_stderr(std::chrono::milliseconds timeout) {
  return read_until_eof(stderr_, timeout);
}

void Child::signal(int sig) const {
  ::kill(pid_, sig);
}

std::string exec_stream(std::string_view text, std::string_view name) {
  const std::string header = "\n--- " + std::string(name) + " ---\n";
  const std::size_t start = text.find(header);
  if (start == std::string_view::npos) return {};
  const std::size_t from = start + header.size();
  // What a report may write after a stream's section, each on a line of its
  // own (server/exec/job_result.cc).
  std::size_t end = text.size();
  for (const std::string_view next :
       {std::string_view("\n--- stderr ---\n"), std::string_view("\nbrig could not keep"),
        std::string_view("\nbrig: ")}) {
    if (const std::size_t at = text.find(next, from); at != std::string_view::npos)
      end = std::min(end, at);
  }
  return std::string(text.substr(from, end - from));
}

std::string result_stream(const Json& result, std::string_view name) {
  const Json& content = result.contains("content") ? result["content"] : Json::array();
  if (content.empty() || !content[0].contains("text")) return {};
  return exec_stream(content[0]["text"].get<std::string>(), name);
}

}  // namespace brig::server::testing
