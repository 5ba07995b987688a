// UnixConnection: a StreamTransport over one accepted Unix stream socket.
#pragma once

#include <memory>

#include <asio/local/stream_protocol.hpp>

#include "server/transport/stream_transport.h"

namespace brig::transport {

class UnixConnection final : public StreamTransport {
 public:
  // Takes the connected socket; peer is its SO_PEERCRED credentials.
  static std::shared_ptr<UnixConnection> create(asio::local::stream_protocol::socket socket,
                                                StreamLimits limits, std::string name,
                                                process::PeerCredentials peer);

  UnixConnection(asio::local::stream_protocol::socket socket, StreamLimits limits, std::string name,
                 process::PeerCredentials peer);

 private:
  asio::awaitable<std::size_t> read_some(asio::mutable_buffer buffer, std::error_code& ec) override;
  std::size_t write_now(const std::vector<asio::const_buffer>& buffers,
                        std::error_code& ec) override;
  asio::awaitable<std::size_t> write_some(const std::vector<asio::const_buffer>& buffers,
                                          std::error_code& ec) override;
  void stop_reading() override;
  void close_descriptors() override;

  asio::local::stream_protocol::socket socket_;
};

}  // namespace brig::transport
