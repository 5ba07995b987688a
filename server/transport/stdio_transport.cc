#include "server/transport/stdio_transport.h"

#include <fcntl.h>

#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

namespace brig::transport {
namespace {

void restore_flags(asio::posix::stream_descriptor& d, int flags) {
  if (!d.is_open()) return;
  if (flags >= 0) ::fcntl(d.native_handle(), F_SETFL, flags);
  std::error_code ignored;
  d.close(ignored);
}

}  // namespace

std::shared_ptr<StdioTransport> StdioTransport::create(
    const asio::any_io_executor& executor, UniqueFd in, UniqueFd out, StreamLimits limits,
    std::string name, std::optional<process::PeerCredentials> peer) {
  return std::make_shared<StdioTransport>(executor, std::move(in), std::move(out), limits,
                                          std::move(name), std::move(peer));
}

StdioTransport::StdioTransport(const asio::any_io_executor& executor, UniqueFd in, UniqueFd out,
                               StreamLimits limits, std::string name,
                               std::optional<process::PeerCredentials> peer)
    : StreamTransport(executor, limits, std::move(name), std::move(peer)),
      in_(executor),
      out_(executor),
      in_flags_(::fcntl(in.get(), F_GETFL)),
      out_flags_(::fcntl(out.get(), F_GETFL)) {
  in_.assign(in.release());
  out_.assign(out.release());
  // For write_now(); asio's own writes cope with either mode, and the flags
  // are restored on close.
  std::error_code ignored;
  out_.non_blocking(true, ignored);
}

asio::awaitable<std::size_t> StdioTransport::read_some(asio::mutable_buffer buffer,
                                                       std::error_code& ec) {
  if (!in_.is_open()) {
    ec = asio::error::operation_aborted;
    co_return 0;
  }
  co_return co_await in_.async_read_some(buffer, asio::redirect_error(asio::use_awaitable, ec));
}

std::size_t StdioTransport::write_now(const std::vector<asio::const_buffer>& buffers,
                                      std::error_code& ec) {
  return out_.write_some(buffers, ec);
}

asio::awaitable<std::size_t> StdioTransport::write_some(
    const std::vector<asio::const_buffer>& buffers, std::error_code& ec) {
  co_return co_await out_.async_write_some(buffers, asio::redirect_error(asio::use_awaitable, ec));
}

void StdioTransport::stop_reading() {
  restore_flags(in_, in_flags_);
}

void StdioTransport::close_descriptors() {
  restore_flags(in_, in_flags_);
  restore_flags(out_, out_flags_);
}

}  // namespace brig::transport
