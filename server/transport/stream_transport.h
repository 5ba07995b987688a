// StreamTransport: the Transport logic shared by every byte-stream connection
// (pipes, terminals, Unix sockets): an outgoing queue written as gathered
// writes of every message waiting (a pipelining client gets many answers per
// system call), a read loop, and backpressure against a peer that stops reading.
//
// Backpressure, exactly: every message is queued (none is dropped or split),
// but once the queued bytes reach StreamLimits::send_queue_bytes the
// transport stops handling input (so the peer cannot ask for more work; a read
// already under way is held unprocessed, at most one read_chunk_bytes) until
// the queue falls below the limit again. If the queue stays at or above the
// limit for StreamLimits::stall_timeout without a break, the peer is not
// reading: the transport reports that through on_input_end and closes without
// flushing. Only calls already running can add to a full queue, so it is
// bounded by the limit plus their results. close() gives a pending flush at
// most stall_timeout before closing anyway.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/buffer.hpp>
#include <asio/steady_timer.hpp>

#include "server/transport/transport.h"

namespace brig::transport {

// The output queued on every connection of a server, together. While it is
// at its limit, a connection holding more than kFairShare of it is treated as
// full (StreamTransport::output_full): it reads no input and starts no work,
// so connections that stall together cannot hold more than the limit plus
// what their calls in flight produce, and a client that reads its answers
// (whose queue stays small) goes on.
struct OutputBudget {
  static constexpr std::size_t kFairShare = std::size_t{1} << 20;
  std::size_t limit = std::size_t{256} << 20;
  std::size_t used = 0;
  bool full() const { return used >= limit; }
};

// Per-connection output limits; the defaults are brig's.
struct StreamLimits {
  std::size_t send_queue_bytes = std::size_t{64} << 20;  // pause input at this many queued bytes
  // Start no work (Transport::output_backlogged) while more than this many
  // bytes wait unread: one large reply the client has not read yet, never
  // a backlog of them. A client that reads as replies come is never held.
  std::size_t backlog_bytes = std::size_t{1} << 20;
  std::chrono::milliseconds stall_timeout = std::chrono::seconds(30);  // full queue → close
  std::size_t read_chunk_bytes = std::size_t{64} << 10;                // one read request's buffer
  // While lines are short, reads take at most this much: a pipelining
  // client's answers then go out after every few dozen requests instead of
  // after 64 KiB of them, and client and server work at the same time
  // (pipelined echo: +10-20% req/s). A read that ends inside a line (no
  // newline) makes the next one read_chunk_bytes, for long messages.
  std::size_t line_read_bytes = std::size_t{8} << 10;
  // Shared by every connection of the server; null: none.
  std::shared_ptr<OutputBudget> budget = nullptr;
};

class StreamTransport : public Transport, public std::enable_shared_from_this<StreamTransport> {
 public:
  // Gives what is still queued back to the server's budget (a transport
  // dropped without closing, say one never started).
  ~StreamTransport() override;
  void start(TransportHandlers handlers) override;
  void send(std::string message) override;
  void close() override;
  void abort() override;
  const std::optional<process::PeerCredentials>& peer() const override { return peer_; }
  const std::string& name() const override { return name_; }

  // Bytes queued for writing and not yet written (0 once closed).
  std::size_t queued_bytes() const { return queued_bytes_; }
  // True while input is paused because the queue is full.
  bool input_paused() const { return paused_; }
  bool output_full() const override;
  bool output_backlogged() const override;
  asio::awaitable<void> output_caught_up() override;

 protected:
  StreamTransport(const asio::any_io_executor& executor, StreamLimits limits, std::string name,
                  std::optional<process::PeerCredentials> peer);

  // One read request; sets ec (asio::error::eof at end of input).
  virtual asio::awaitable<std::size_t> read_some(asio::mutable_buffer buffer,
                                                 std::error_code& ec) = 0;
  // One gathered write of buffers, in order; returns how many bytes the
  // kernel took (at least one unless ec is set).
  virtual asio::awaitable<std::size_t> write_some(const std::vector<asio::const_buffer>& buffers,
                                                  std::error_code& ec) = 0;
  // The same write, but only what the kernel takes without waiting:
  // ec is asio::error::would_block when it takes nothing.
  virtual std::size_t write_now(const std::vector<asio::const_buffer>& buffers,
                                std::error_code& ec) = 0;
  // Ends reading: a pending read_some completes soon; writes go on.
  virtual void stop_reading() = 0;
  // Closes every descriptor; pending operations complete with errors.
  virtual void close_descriptors() = 0;

 private:
  enum class State { created, open, closing, closed };

  asio::awaitable<void> read_loop();
  // Writes what is queued, in one system call if the peer takes it all; else
  // starts write_loop for the rest. Runs from a handler of its own, posted
  // by the first send() after the queue was empty: the answers that other
  // handlers already waiting add in the meantime go out in the same write.
  void flush();
  asio::awaitable<void> write_loop();
  // Points batch_ at what is queued: up to 64 entries and 256 KiB beyond the first.
  void gather();
  // Drops what the kernel took from the queue, a message partly written included.
  void consume(std::size_t written);
  // Waits while the queue is full; true if the transport is still open afterwards.
  asio::awaitable<bool> wait_while_full();
  // Starts the stall deadline: the queue just reached the limit.
  void arm_stall_timer();
  void schedule_flush();
  void start_writing();
  void report_input_end(std::optional<Error> why);
  // Reports why (once), then closes without flushing.
  void fail(Error why);
  void finish();

  asio::any_io_executor executor_;
  StreamLimits limits_;
  std::string name_;
  std::optional<process::PeerCredentials> peer_;
  TransportHandlers handlers_;
  State state_ = State::created;
  bool input_reported_ = false;
  bool writing_ = false;       // write_loop runs
  bool flush_posted_ = false;  // flush() is posted
  bool paused_ = false;
  bool stall_armed_ = false;
  std::deque<std::string> queue_;
  std::vector<asio::const_buffer> batch_;  // what the write under way holds of queue_
  std::size_t in_flight_ = 0;              // queue_ entries batch_ points into
  // Small messages share queue entries up to this size (see send()).
  static constexpr std::size_t kShareBytes = std::size_t{64} << 10;
  std::string spare_;              // a written shared entry's storage, for the next one
  std::size_t front_written_ = 0;  // bytes of queue_.front() already written
  std::size_t queued_bytes_ = 0;
  asio::steady_timer drain_timer_;  // wakes a paused reader
  asio::steady_timer stall_timer_;  // runs while the queue is at or over the limit
  asio::steady_timer flush_timer_;  // bounds close()'s flush
  // Calls waiting in output_caught_up(), woken when the backlog is gone or
  // the transport closes.
  std::vector<asio::steady_timer*> drain_waiters_;
  // Adds (or takes back) queued bytes, here and in the server's budget.
  void count_queued(std::size_t added, std::size_t removed);
  void wake_drain_waiters();
};

}  // namespace brig::transport
