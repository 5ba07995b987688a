#include "server/transport/unix_connection.h"

#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

namespace brig::transport {

std::shared_ptr<UnixConnection> UnixConnection::create(asio::local::stream_protocol::socket socket,
                                                       StreamLimits limits, std::string name,
                                                       process::PeerCredentials peer) {
  return std::make_shared<UnixConnection>(std::move(socket), limits, std::move(name), peer);
}

UnixConnection::UnixConnection(asio::local::stream_protocol::socket socket, StreamLimits limits,
                               std::string name, process::PeerCredentials peer)
    : StreamTransport(socket.get_executor(), limits, std::move(name), peer),
      socket_(std::move(socket)) {
  // For write_now(); asio's own writes cope with either mode.
  std::error_code ignored;
  socket_.non_blocking(true, ignored);
}

asio::awaitable<std::size_t> UnixConnection::read_some(asio::mutable_buffer buffer,
                                                       std::error_code& ec) {
  co_return co_await socket_.async_read_some(buffer, asio::redirect_error(asio::use_awaitable, ec));
}

std::size_t UnixConnection::write_now(const std::vector<asio::const_buffer>& buffers,
                                      std::error_code& ec) {
  return socket_.write_some(buffers, ec);
}

asio::awaitable<std::size_t> UnixConnection::write_some(
    const std::vector<asio::const_buffer>& buffers, std::error_code& ec) {
  co_return co_await socket_.async_write_some(buffers,
                                              asio::redirect_error(asio::use_awaitable, ec));
}

// SHUT_RD wakes a pending read with end-of-file while writes go on; the
// socket.cancel() alternative would cancel the flush too.
void UnixConnection::stop_reading() {
  std::error_code ignored;
  socket_.shutdown(asio::local::stream_protocol::socket::shutdown_receive, ignored);
}

void UnixConnection::close_descriptors() {
  std::error_code ignored;
  socket_.close(ignored);
}

}  // namespace brig::transport
