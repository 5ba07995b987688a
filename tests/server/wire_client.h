// A raw newline-framed client for brig's wire tests and MCP benchmark: spawns
// a server over pipes or connects to its Unix socket, writes bytes exactly as
// given and reads whole lines back. No JSON here: callers decide what to send.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/unique_fd.h"

namespace brig::wire {

// The executable `name` in the same folder as this program (/proc/self/exe).
std::string sibling_executable(std::string_view name);

// One byte-stream connection to a server: the end read from and the end
// written to (one socket, or a child's stdout and stdin pipes). Blocking
// writes, reads with deadlines. One thread may read while another writes.
class WireStream {
 public:
  // read_fd: the server's output; write_fd: its input. socket: both ends are
  // the same socket (close_write() then shuts the socket down for writing).
  WireStream(UniqueFd read_fd, UniqueFd write_fd, bool socket);

  // A connection to the Unix socket at path; empty if connect() fails.
  static std::optional<WireStream> connect_unix(const std::string& path);

  // Writes all of bytes; false if the server is gone (EPIPE) or another error.
  bool write(std::string_view bytes);
  // The next line without its '\n'; empty on EOF or when timeout passes first.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  // True once the server closed its output and every buffered line was read.
  bool at_eof() const { return eof_ && start_ == buffer_.size(); }
  // Ends the stream towards the server (EOF on its input); reading goes on.
  void close_write();

 private:
  UniqueFd read_fd_;
  UniqueFd write_fd_;
  bool socket_ = false;
  std::string buffer_;  // bytes read and not yet returned start at start_
  std::size_t start_ = 0;
  std::size_t scanned_ = 0;  // buffer_[start_, scanned_) holds no '\n'
  bool eof_ = false;
};

// A server child process. Destruction SIGKILLs it if it still runs, and reaps it.
class ServerProcess {
 public:
  // Starts exe with args. With pipes, its stdin/stdout are a WireStream
  // (stream()); without, both are /dev/null. stderr is inherited (test logs)
  // unless quiet sends it to /dev/null. Empty if the process could not start.
  static std::optional<ServerProcess> start(const std::string& exe,
                                            const std::vector<std::string>& args, bool pipes,
                                            bool quiet = false);

  ServerProcess(ServerProcess&& other) noexcept;
  ServerProcess& operator=(ServerProcess&&) = delete;
  ServerProcess(const ServerProcess&) = delete;
  ~ServerProcess();

  pid_t pid() const { return pid_; }
  // The pipes to the server; only for a process started with pipes.
  WireStream& stream() { return *stream_; }
  // Waits up to timeout for the process to exit; its wait status, or empty if
  // it still runs.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);

 private:
  ServerProcess(pid_t pid, std::optional<WireStream> stream);

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::optional<WireStream> stream_;
};

// Polls until a Unix socket at path accepts a connection; false at timeout.
bool wait_for_socket(const std::string& path, std::chrono::milliseconds timeout);

// A fresh private directory under /tmp (short, so socket paths fit in sun_path).
std::string make_temp_dir();

}  // namespace brig::wire
