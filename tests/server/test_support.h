// Helpers for the server tests: a line-oriented JSON-RPC client over fds,
// child processes with pipes, short temp directories, polling with deadlines.
// Every wait has a generous deadline and returns on success: tests assert
// order and outcome, never speed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/unique_fd.h"
#include "protocol/json_rpc.h"

namespace brig::server::testing {

using protocol::Json;
using namespace std::chrono_literals;

// How long any single wait in these tests may take before it counts as a failure.
inline constexpr std::chrono::milliseconds kDeadline = 20s;

// The absolute path of program name next to the running test binary.
std::string sibling_binary(std::string_view name);

// Processes whose command line (arguments joined by spaces) contains needle.
// Safe while processes come and go: one that vanishes mid-read is skipped.
std::vector<pid_t> pids_with_cmdline(std::string_view needle);

// Polls cond every 10 ms until it holds (true) or timeout passes (false).
bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout = kDeadline);

// What an exec or job report shows of one stream ("stdout", "stderr"): its
// section of the text (structuredContent has only counts; docs/tools.md,
// "One copy"), which ends with a newline; empty when not shown.
std::string exec_stream(std::string_view text, std::string_view name);
// The same from a CallToolResult's JSON: its first text block.
std::string result_stream(const Json& result, std::string_view name);

// A temporary directory with a short path under /tmp (room for socket
// names), mode 0755, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() : TempDir("/tmp") {}
  // Under parent instead ("/dev/shm": a tmpfs, where fsync costs nothing).
  explicit TempDir(const std::string& parent);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// A JSON-RPC client that writes one message per line and reads lines back.
class LineClient {
 public:
  // Reads from in, writes to out; out empty: write to in (a socket).
  LineClient(UniqueFd in, UniqueFd out = UniqueFd());

  // Writes message as one line; false if the write failed.
  bool send(const Json& message);
  // Writes bytes as they are.
  bool send_raw(std::string_view bytes);
  // The next line as JSON; empty after timeout, at EOF (eof() is then
  // true), or when the line is not JSON (bad_line() holds it).
  std::optional<Json> read(std::chrono::milliseconds timeout = kDeadline);
  // Reads until the response whose id is id; every other message read on
  // the way is appended to others (if given). Empty on timeout or EOF.
  std::optional<Json> read_response(const Json& id, std::vector<Json>* others = nullptr,
                                    std::chrono::milliseconds timeout = kDeadline);
  // Ends the server's input (shutdown(SHUT_WR) on a socket, close on a pipe).
  void close_write();
  // Stops reading the server's output: closes the read end of a pipe, so the
  // server's next write fails with EPIPE (and SIGPIPE unless it ignores it).
  // On a socket, this closes the whole connection.
  void close_read();

  bool eof() const { return eof_; }
  const std::string& bad_line() const { return bad_line_; }

 private:
  UniqueFd in_;
  UniqueFd out_;
  std::string buffer_;
  std::size_t scanned_ = 0;  // buffer_'s first bytes known to hold no newline
  std::string bad_line_;
  bool eof_ = false;
};

// Connects to the Unix socket at path; empty on failure (errno set).
UniqueFd connect_unix(const std::string& path);

// A legacy-era initialize request (2025-11-25) and its notification.
Json initialize_request(const Json& id);
Json initialized_notification();
// Sends initialize + initialized and checks the answer; false on failure.
bool initialize(LineClient& client);
// A tools/call request; progress_token empty: none.
Json tool_call(const Json& id, std::string_view tool, Json arguments,
               std::optional<Json> progress_token = std::nullopt);
// notifications/cancelled for request id.
Json cancel_notification(const Json& id);

// A child process started with pipes for stdin, stdout and stderr, and
// SIGPIPE at its default disposition (as a real client starts brig).
class Child {
 public:
  struct Options {
    bool close_stdin = false;   // start with fd 0 closed instead of a pipe
    bool close_stderr = false;  // start with fd 2 closed instead of a pipe
    std::string cwd;            // empty: inherit
  };
  // Starts argv[0] (a path) with argv; the process is killed on destruction
  // if it is still running.
  Child(const std::vector<std::string>& argv, Options options);
  Child(const std::vector<std::string>& argv) : Child(argv, Options{}) {}
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // The client side of the child's stdin/stdout (moved out; call once).
  LineClient take_client();
  // Waits for exit; the wait status, or empty after timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout = kDeadline);
  // Writes bytes to the child's stdin, then closes it (EOF); false if a write
  // failed. Only for input small enough to sit in the pipe while the child
  // has not read it yet (64 KiB).
  bool write_stdin_and_close(std::string_view bytes);
  // Everything the child wrote to stdout / stderr until it closed it or timeout.
  std::string read_stdout(std::chrono::milliseconds timeout = kDeadline);
  std::string read_stderr(std::chrono::milliseconds timeout = kDeadline);
  void signal(int sig) const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  UniqueFd stdin_;
  UniqueFd stdout_;
  UniqueFd stderr_;
};

// Whether a wait status (Child::wait) says the process exited with 0.
bool exited_zero(const std::optional<int>& status);

}  // namespace brig::server::testing
