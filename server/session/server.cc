#include "server/session/server.h"

#include <csignal>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include "server/transport/unix_connection.h"

namespace brig::session {

Server::Server(asio::io_context& io, const tools::Registry& registry, ServerConfig config)
    : io_(io),
      registry_(registry),
      config_(std::move(config)),
      signals_(io, SIGTERM, SIGINT, SIGHUP) {
  signals_.async_wait([this](std::error_code ec, int signal) {
    if (ec) return;
    spdlog::info("received {}; shutting down", ::strsignal(signal));
    shutdown();
  });
}

void Server::serve_stdio(std::shared_ptr<transport::Transport> transport) {
  add_session(std::move(transport), /*ends_server=*/true, config_.session);
}

void Server::serve_unix(std::unique_ptr<transport::UnixListener> listener) {
  listener_ = std::move(listener);
  asio::co_spawn(io_, accept_loop(), asio::detached);
}

asio::awaitable<void> Server::accept_loop() {
  asio::steady_timer backoff(io_);
  while (!shutting_down_ && listener_) {
    std::error_code ec;
    asio::local::stream_protocol::socket socket =
        co_await listener_->acceptor().async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (shutting_down_ || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // EMFILE and friends: the pending connection stays queued, so retrying
      // at once would spin; wait for descriptors to free up.
      spdlog::warn("accept on {}: {}", listener_->path(), ec.message());
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    accept(std::move(socket));
  }
}

void Server::accept(asio::local::stream_protocol::socket socket) {
  const std::uint64_t number = ++connections_accepted_;
  auto peer = process::peer_credentials(socket.native_handle());
  if (!peer) {
    spdlog::warn("refused connection {}: {}", number, peer.error().to_string());
    return;
  }
  if (!config_.allow.allows(*peer)) {
    spdlog::warn(
        "refused connection {} from {}: not an allowed user ({}; see --allow-uid, "
        "--allow-gid)",
        number, peer->to_string(), config_.allow.to_string());
    return;
  }
  if (sessions_.size() >= config_.max_connections) {
    spdlog::warn("refused connection {} from {}: {} connections are open (--max-connections)",
                 number, peer->to_string(), sessions_.size());
    return;
  }
  if (config_.admit) {
    if (auto admitted = config_.admit(*peer); !admitted) {
      spdlog::warn("refused connection {} from {}: {}", number, peer->to_string(),
                   admitted.error().to_string());
      return;
    }
  }
  const std::string name = fmt::format("connection {} ({})", number, peer->to_string());
  spdlog::info("{}: accepted", name);
  // A peer served as itself is told about its own jail: its home, its ids.
  SessionConfig session = config_.session;
  if (config_.instructions_for) session.instructions = config_.instructions_for(*peer);
  add_session(transport::UnixConnection::create(std::move(socket), config_.stream, name, *peer),
              /*ends_server=*/false, session);
}

void Server::add_session(std::shared_ptr<transport::Transport> transport, bool ends_server,
                         const SessionConfig& session) {
  const std::uint64_t id = ++sessions_started_;
  auto runner = SessionRunner::create(
      io_.get_executor(), std::move(transport), registry_, session, [this, id, ends_server] {
        if (auto it = sessions_.find(id); it != sessions_.end()) {
          spdlog::debug("{}: closed", it->second->transport().name());
          sessions_.erase(it);
        }
        if (ends_server) shutdown();
      });
  sessions_.emplace(id, runner);
  runner->start();
}

void Server::shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  shutdown_started_ = std::chrono::steady_clock::now();
  std::error_code ignored;
  signals_.cancel(ignored);
  if (listener_) listener_->close();
  std::vector<std::shared_ptr<SessionRunner>> open;
  for (auto& [id, runner] : sessions_) open.push_back(runner);
  for (auto& runner : open) runner->shutdown();
  io_.stop();
}

void Server::run() {
  io_.run();
  if (!shutting_down_) return;
  io_.restart();
  io_.run_until(shutdown_started_ + config_.shutdown_grace);
  if (!sessions_.empty()) {
    spdlog::warn("exiting with {} connection(s) not yet closed after {} ms", sessions_.size(),
                 config_.shutdown_grace.count());
  }
}

}  // namespace brig::session
