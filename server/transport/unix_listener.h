// UnixListener: the listening socket of `brig serve --listen unix://PATH`:
// claims the path (replacing a stale socket, refusing a live one), creates
// the socket with an exact mode, and removes it again on close.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include <asio/any_io_executor.hpp>
#include <asio/local/stream_protocol.hpp>

#include "jail/base/error.h"

namespace brig::transport {

// The socket path of a --listen URI: "unix:///abs/path.sock" → "/abs/path.sock".
// Fails on another scheme, a relative or empty path, or a path too long for
// sockaddr_un (107 bytes at most).
Result<std::string> parse_listen_uri(std::string_view uri);

class UnixListener {
 public:
  // Binds and listens on path with permission bits mode (0..0777; the socket
  // never exists with wider bits, even briefly). An existing socket that no
  // one accepts on is removed first; a live one, or a path that exists and is
  // not a socket, is an error that says so.
  static Result<std::unique_ptr<UnixListener>> open(const asio::any_io_executor& executor,
                                                    const std::string& path, mode_t mode);

  UnixListener(asio::local::stream_protocol::acceptor acceptor, std::string path, dev_t dev,
               ino_t ino);
  ~UnixListener();
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  asio::local::stream_protocol::acceptor& acceptor() { return acceptor_; }
  const std::string& path() const { return path_; }

  // Stops accepting and removes the socket file if it is still the one this
  // listener created (another server may have replaced it). Idempotent.
  void close();

 private:
  asio::local::stream_protocol::acceptor acceptor_;
  std::string path_;
  dev_t dev_;
  ino_t ino_;
};

}  // namespace brig::transport
