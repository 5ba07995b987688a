// Transport: a connection that carries newline-delimited JSON-RPC text, with
// no knowledge of what the text means (framing and meaning are the session
// runner's). Implementations: StdioTransport (a pair of fds: stdin/stdout or
// a pipe pair in tests) and UnixConnection (one accepted socket).
#pragma once

#include <functional>
#include <optional>

#include <asio/awaitable.hpp>
#include <string>
#include <string_view>

#include "jail/base/error.h"
#include "server/process/peer_credentials.h"

namespace brig::transport {

// What a transport reports to its owner. Every callback runs on the
// transport's io_context; any of them may be empty.
struct TransportHandlers {
  // A chunk of input exactly as read: may hold part of a line or many lines.
  std::function<void(std::string_view bytes)> on_bytes;
  // Called once when input stops for a reason the transport saw (not after
  // the owner's own close()/abort()): EOF (nullopt), a read or write
  // failure, or a peer that stopped reading its output (an Error saying so).
  std::function<void(std::optional<Error> why)> on_input_end;
  // Called once, last, when every descriptor is closed; nothing is read or
  // written after it.
  std::function<void()> on_closed;
};

// A bidirectional message pipe. Single-threaded: call it only from its
// io_context's thread.
class Transport {
 public:
  virtual ~Transport() = default;

  // Begins reading; callbacks start arriving. Call at most once.
  virtual void start(TransportHandlers handlers) = 0;
  // Queues one message (without its '\n'; the transport adds it) to be
  // written by a single write request. Never blocks; dropped once closing.
  virtual void send(std::string message) = 0;
  // Stops reading, writes what is queued (for at most the stall timeout), then
  // closes. Idempotent.
  virtual void close() = 0;
  // Closes now, dropping queued output. Idempotent.
  virtual void abort() = 0;

  // True while the output queue is at its limit, or over its share of a full
  // server-wide budget: the transport reads no input meanwhile.
  virtual bool output_full() const { return false; }
  // True while a new reply would only wait behind earlier ones the peer has
  // not read: output_full(), or a backlog over StreamLimits::backlog_bytes.
  // No work starts meanwhile (the file tools, exec): a client that does not
  // read its answers gets no more of them made, and holds the shared file
  // worker for no more than the calls it started before its backlog grew.
  virtual bool output_backlogged() const { return false; }
  // Returns once output_backlogged() may be false again (or the transport
  // closed).
  virtual asio::awaitable<void> output_caught_up() { co_return; }

  // The peer's credentials when the kernel knows them (Unix sockets); empty
  // for pipes and terminals.
  virtual const std::optional<process::PeerCredentials>& peer() const = 0;
  // A short name for logs: "stdio", "unix connection 3 (pid 12 uid 1000 gid 1000)".
  virtual const std::string& name() const = 0;
};

}  // namespace brig::transport
