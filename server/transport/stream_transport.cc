#include "server/transport/stream_transport.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/error.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

namespace brig::transport {

StreamTransport::StreamTransport(const asio::any_io_executor& executor, StreamLimits limits,
                                 std::string name, std::optional<process::PeerCredentials> peer)
    : executor_(executor),
      limits_(limits),
      name_(std::move(name)),
      peer_(std::move(peer)),
      drain_timer_(executor),
      stall_timer_(executor),
      flush_timer_(executor) {}

StreamTransport::~StreamTransport() {
  count_queued(0, queued_bytes_);
}

void StreamTransport::start(TransportHandlers handlers) {
  if (state_ != State::created) return;
  handlers_ = std::move(handlers);
  state_ = State::open;
  asio::co_spawn(executor_, read_loop(), asio::detached);
  if (!queue_.empty()) schedule_flush();
}

void StreamTransport::send(std::string message) {
  if (state_ != State::created && state_ != State::open) return;
  message.push_back('\n');
  count_queued(message.size(), 0);
  // Small messages share one queue entry: asio gathers at most 64 buffers per
  // system call, and a pipelining client's hundreds of short answers then
  // still go out in one write. An entry the write under way points into is
  // never appended to; a large message keeps its own entry (no copy). A
  // shared entry is sized once and recycled after it is written (spare_):
  // growing strings through 64 KiB again and again made the allocator
  // consolidate its free lists over and over.
  if (queue_.size() > in_flight_ && queue_.back().size() + message.size() <= kShareBytes) {
    std::string& back = queue_.back();
    if (back.capacity() < kShareBytes) {
      if (spare_.capacity() >= kShareBytes) {
        spare_.assign(back);
        back.swap(spare_);
        spare_ = std::string();
      } else {
        back.reserve(kShareBytes);
      }
    }
    back += message;
  } else {
    queue_.push_back(std::move(message));
  }
  if (output_full() && !stall_armed_) arm_stall_timer();
  if (state_ == State::open) schedule_flush();
}

void StreamTransport::count_queued(std::size_t added, std::size_t removed) {
  queued_bytes_ = queued_bytes_ + added - removed;
  if (limits_.budget) limits_.budget->used = limits_.budget->used + added - removed;
}

bool StreamTransport::output_full() const {
  if (state_ == State::closed) return false;
  if (queued_bytes_ >= limits_.send_queue_bytes) return true;
  return limits_.budget && limits_.budget->full() && queued_bytes_ > OutputBudget::kFairShare;
}

bool StreamTransport::output_backlogged() const {
  if (state_ == State::closed) return false;
  return output_full() || queued_bytes_ > limits_.backlog_bytes;
}

asio::awaitable<void> StreamTransport::output_caught_up() {
  auto self = shared_from_this();
  while (output_backlogged()) {
    asio::steady_timer wake(executor_, asio::steady_timer::time_point::max());
    drain_waiters_.push_back(&wake);
    std::error_code ec;
    try {
      co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    } catch (...) {
      // Refused at once: the call was cancelled before it began to wait.
      std::erase(drain_waiters_, &wake);
      throw;
    }
    std::erase(drain_waiters_, &wake);
    // Cancelled (the call, not a wake-up): let the caller's next co_await
    // throw; the transport may still be backlogged.
    if (ec && (co_await asio::this_coro::cancellation_state).cancelled() !=
                  asio::cancellation_type::none) {
      co_return;
    }
  }
}

void StreamTransport::wake_drain_waiters() {
  for (asio::steady_timer* t : drain_waiters_) t->cancel();
}

void StreamTransport::close() {
  if (state_ == State::closing || state_ == State::closed) return;
  if (state_ == State::created || queue_.empty()) return finish();
  state_ = State::closing;
  stop_reading();
  drain_timer_.cancel();
  flush_timer_.expires_after(limits_.stall_timeout);
  flush_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (ec || self->state_ != State::closing) return;
    self->fail(Error{"flush output", self->name_,
                     fmt::format("{} bytes still unwritten after {} ms; closing anyway",
                                 self->queued_bytes_, self->limits_.stall_timeout.count())});
  });
}

void StreamTransport::abort() {
  finish();
}

asio::awaitable<void> StreamTransport::read_loop() {
  auto self = shared_from_this();
  std::string buffer(limits_.read_chunk_bytes, '\0');
  const std::size_t short_read = std::min(limits_.line_read_bytes, limits_.read_chunk_bytes);
  std::size_t want = short_read;
  while (state_ == State::open) {
    if (!co_await wait_while_full()) co_return;
    std::error_code ec;
    const std::size_t n = co_await read_some(asio::buffer(buffer.data(), want), ec);
    if (state_ != State::open) co_return;
    // A read already in progress when the queue filled up is held, not
    // handled, until the queue drains: at most one chunk waits in memory.
    if (n > 0) {
      want = std::memchr(buffer.data(), '\n', n) != nullptr ? short_read : buffer.size();
      if (!co_await wait_while_full()) co_return;
      if (handlers_.on_bytes) handlers_.on_bytes(std::string_view(buffer.data(), n));
    }
    if (ec && state_ == State::open) {
      if (ec == asio::error::eof) {
        report_input_end(std::nullopt);
      } else {
        report_input_end(Error{"read from peer", name_, ec.message(), ec.value()});
      }
      co_return;
    }
  }
}

asio::awaitable<bool> StreamTransport::wait_while_full() {
  while (state_ == State::open && output_full()) {
    paused_ = true;
    // Woken by the writer once the queue is below the limit, or by close;
    // the stall timer bounds how long that may take.
    drain_timer_.expires_at(asio::steady_timer::time_point::max());
    std::error_code ec;
    co_await drain_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    paused_ = false;
  }
  co_return state_ == State::open;
}

void StreamTransport::arm_stall_timer() {
  stall_armed_ = true;
  stall_timer_.expires_after(limits_.stall_timeout);
  stall_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (ec) return;
    self->stall_armed_ = false;
    if (self->state_ == State::closed || !self->output_full()) return;
    self->fail(Error{"write to peer", self->name_,
                     fmt::format("the peer is not reading: {} bytes stayed queued (limit {}) for "
                                 "{} ms",
                                 self->queued_bytes_, self->limits_.send_queue_bytes,
                                 self->limits_.stall_timeout.count())});
  });
}

void StreamTransport::schedule_flush() {
  if (writing_ || flush_posted_) return;
  flush_posted_ = true;
  asio::post(executor_, [self = shared_from_this()] { self->flush(); });
}

void StreamTransport::flush() {
  flush_posted_ = false;
  if (writing_ || (state_ != State::open && state_ != State::closing)) return;
  if (!queue_.empty()) {
    gather();
    std::error_code ec;
    const std::size_t written = write_now(batch_, ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again) {
      return fail(Error{"write to peer", name_, ec.message(), ec.value()});
    }
    consume(written);
  }
  if (!queue_.empty()) {
    start_writing();
  } else if (state_ == State::closing) {
    finish();
  }
}

void StreamTransport::start_writing() {
  if (writing_) return;
  writing_ = true;
  asio::co_spawn(executor_, write_loop(), asio::detached);
}

asio::awaitable<void> StreamTransport::write_loop() {
  auto self = shared_from_this();
  while (!queue_.empty() && (state_ == State::open || state_ == State::closing)) {
    gather();
    std::error_code ec;
    in_flight_ = batch_.size();
    const std::size_t written = co_await write_some(batch_, ec);
    in_flight_ = 0;
    if (state_ == State::closed) co_return;
    if (ec) {
      fail(Error{"write to peer", name_, ec.message(), ec.value()});
      co_return;
    }
    consume(written);
  }
  writing_ = false;
  if (state_ == State::closing) finish();
}

void StreamTransport::gather() {
  // Everything waiting, up to the 64 buffers asio gathers per system call
  // (each holding many small messages, see send()) and 256 KiB beyond the
  // first one, in one write: a pipelining client's many answers cost one
  // system call. std::deque keeps references to elements valid across
  // push_back.
  constexpr std::size_t max_messages = 64;
  constexpr std::size_t batch_bytes = std::size_t{256} << 10;
  batch_.clear();
  std::size_t bytes = 0;
  for (const std::string& m : queue_) {
    if (batch_.size() == max_messages || (!batch_.empty() && bytes + m.size() > batch_bytes)) {
      break;
    }
    batch_.push_back(batch_.empty() ? asio::buffer(m) + front_written_ : asio::buffer(m));
    bytes += batch_.back().size();
  }
}

void StreamTransport::consume(std::size_t written) {
  count_queued(0, written);
  while (written > 0) {
    const std::size_t left = queue_.front().size() - front_written_;
    if (written < left) {
      front_written_ += written;
      break;
    }
    written -= left;
    front_written_ = 0;
    if (queue_.front().capacity() >= kShareBytes && spare_.capacity() < kShareBytes) {
      spare_ = std::move(queue_.front());
      spare_.clear();
    }
    queue_.pop_front();
  }
  if (!output_full()) {
    if (stall_armed_) {
      stall_armed_ = false;
      stall_timer_.cancel();
    }
    if (paused_) drain_timer_.cancel();
  }
  if (!output_backlogged()) wake_drain_waiters();
}

void StreamTransport::report_input_end(std::optional<Error> why) {
  if (input_reported_) return;
  input_reported_ = true;
  if (handlers_.on_input_end) handlers_.on_input_end(std::move(why));
}

void StreamTransport::fail(Error why) {
  if (state_ == State::closed) return;
  // Reported only while the owner has not closed: after close() it already
  // knows input is over.
  if (state_ == State::open) report_input_end(std::move(why));
  finish();
}

void StreamTransport::finish() {
  if (state_ == State::closed) return;
  const bool started = state_ != State::created;
  state_ = State::closed;
  input_reported_ = true;
  queue_.clear();
  count_queued(0, queued_bytes_);
  front_written_ = 0;
  wake_drain_waiters();
  drain_timer_.cancel();
  stall_timer_.cancel();
  flush_timer_.cancel();
  close_descriptors();
  if (started && handlers_.on_closed) {
    asio::post(executor_, [self = shared_from_this()] {
      // Handlers usually hold their owner, which holds this transport: drop
      // them once the last one has run.
      TransportHandlers handlers = std::move(self->handlers_);
      handlers.on_closed();
    });
  }
}

}  // namespace brig::transport
