// Server: every session of one `brig serve` on one single-threaded asio
// io_context, plus the signals and the limits that span connections.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>

#include "server/session/session_runner.h"
#include "server/transport/peer_allow_list.h"
#include "server/transport/stream_transport.h"
#include "server/transport/unix_listener.h"

namespace brig::session {

struct ServerConfig {
  SessionConfig session;
  transport::StreamLimits stream;
  std::size_t max_connections = 64;  // socket sessions open at once; more are closed at accept
  transport::PeerAllowList allow;    // socket peers allowed in (by SO_PEERCRED)
  // Runs for each socket peer the allow list lets in, before its session
  // starts: an error (logged) refuses the connection. Empty: none refused.
  // A socket peer's calls take its identity (ToolContext::principal()).
  std::function<Result<void>(const process::PeerCredentials& peer)> admit;
  // The MCP `instructions` for a connection of `peer` (its own sandbox's,
  // when brig serves it as another user); empty function: session.instructions.
  std::function<std::string(const process::PeerCredentials& peer)> instructions_for;
  // After SIGTERM/SIGINT/SIGHUP or the stdio client's EOF: how long cancelled
  // calls and queued output get before the process exits anyway.
  std::chrono::milliseconds shutdown_grace = std::chrono::milliseconds(800);
};

class Server {
 public:
  // Installs the SIGTERM/SIGINT/SIGHUP handlers on io; registry must outlive the server.
  Server(asio::io_context& io, const tools::Registry& registry, ServerConfig config);

  // Serves one client on transport; when it is finished (EOF), the server shuts down.
  void serve_stdio(std::shared_ptr<transport::Transport> transport);
  // Accepts clients on listener until shutdown; the listener's file is removed then.
  void serve_unix(std::unique_ptr<transport::UnixListener> listener);
  // Stops accepting, cancels every call, closes every connection after
  // flushing, and makes run() wind down. Idempotent.
  void shutdown();
  // Runs the io_context until shutdown(), then at most shutdown_grace more
  // so cancelled calls return and queued output is written.
  void run();

  std::size_t sessions() const { return sessions_.size(); }

 private:
  asio::awaitable<void> accept_loop();
  void accept(asio::local::stream_protocol::socket socket);
  void add_session(std::shared_ptr<transport::Transport> transport, bool ends_server,
                   const SessionConfig& session);

  asio::io_context& io_;
  const tools::Registry& registry_;
  ServerConfig config_;
  asio::signal_set signals_;
  std::unique_ptr<transport::UnixListener> listener_;
  std::map<std::uint64_t, std::shared_ptr<SessionRunner>> sessions_;
  std::uint64_t connections_accepted_ = 0;
  std::uint64_t sessions_started_ = 0;
  bool shutting_down_ = false;
  std::chrono::steady_clock::time_point shutdown_started_;
};

}  // namespace brig::session
