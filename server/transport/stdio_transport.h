// StdioTransport: a StreamTransport over two file descriptors, one read and
// one written: brig's own stdin/stdout, or a pipe pair in tests.
#pragma once

#include <memory>

#include <asio/posix/stream_descriptor.hpp>

#include "jail/base/unique_fd.h"
#include "server/transport/stream_transport.h"

namespace brig::transport {

class StdioTransport final : public StreamTransport {
 public:
  // Owns in and out (two distinct fds). Their O_NONBLOCK flags, which asio
  // sets on the shared open file description, are restored when closed, so a
  // terminal or pipe is handed back as it was found. peer is the client's
  // credentials if known (e.g. stdin is a socket), else empty.
  static std::shared_ptr<StdioTransport> create(const asio::any_io_executor& executor, UniqueFd in,
                                                UniqueFd out, StreamLimits limits, std::string name,
                                                std::optional<process::PeerCredentials> peer = {});

  StdioTransport(const asio::any_io_executor& executor, UniqueFd in, UniqueFd out,
                 StreamLimits limits, std::string name,
                 std::optional<process::PeerCredentials> peer);

 private:
  asio::awaitable<std::size_t> read_some(asio::mutable_buffer buffer, std::error_code& ec) override;
  std::size_t write_now(const std::vector<asio::const_buffer>& buffers,
                        std::error_code& ec) override;
  asio::awaitable<std::size_t> write_some(const std::vector<asio::const_buffer>& buffers,
                                          std::error_code& ec) override;
  void stop_reading() override;
  void close_descriptors() override;

  asio::posix::stream_descriptor in_;
  asio::posix::stream_descriptor out_;
  int in_flags_;
  int out_flags_;
};

}  // namespace brig::transport
