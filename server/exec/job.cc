#include "server/exec/job.h"

#include <fcntl.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <new>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/redirect_error.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

namespace brig::exec {

const char* stream_name(Stream s) {
  return s == Stream::out ? "stdout" : "stderr";
}

void Job::evict_output() {
  for (Spool& s : spools_) s.evict();
}

Job::Job(std::string id, uid_t owner, std::string command, Spool out, Spool err)
    : id_(std::move(id)),
      owner_(owner),
      command_(std::move(command)),
      started_(Clock::now()),
      spools_{std::move(out), std::move(err)} {}

Job::~Job() {
  // Only reached without a running coroutine (it holds a reference), so the
  // process has ended or was never started; the Process kills what remains.
  for (asio::steady_timer* t : waiters_) t->cancel();
}

std::chrono::milliseconds Job::duration() const {
  if (outcome_ && outcome_->duration.count() > 0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(outcome_->duration);
  }
  const Clock::time_point end = finished_ ? finished_at_ : Clock::now();
  return std::chrono::duration_cast<std::chrono::milliseconds>(end - started_);
}

void Job::start(const asio::any_io_executor& executor, Process process, UniqueFd out_pipe,
                UniqueFd err_pipe, UniqueFd stdin_pipe) {
  process_ = std::move(process);
  if (stdin_pipe) stdin_.emplace(executor, stdin_pipe.release());
  asio::co_spawn(executor, run(shared_from_this(), std::move(out_pipe), std::move(err_pipe)),
                 asio::detached);
}

// self keeps the Job alive while the coroutine runs, whether or not a table
// or a call still holds it.
asio::awaitable<void> Job::run([[maybe_unused]] std::shared_ptr<Job> self, UniqueFd out_pipe,
                               UniqueFd err_pipe) {
  using namespace asio::experimental::awaitable_operators;
  const auto executor = co_await asio::this_coro::executor;
  asio::posix::stream_descriptor out(executor, out_pipe.release());
  asio::posix::stream_descriptor err(executor, err_pipe.release());
  try {
    co_await (pump(out, Stream::out) && pump(err, Stream::err) && wait_end(out, err));
  } catch (const std::exception& e) {
    // Only the io_context going away cancels this coroutine; a Process whose
    // wait failed has already produced a setup_failed outcome.
    spdlog::debug("job {}: stopped following: {}", id_, e.what());
  }
  if (!outcome_) {
    outcome_ =
        jail::setup_failed_outcome(jail::SetupStep::wait, 0, "brig stopped following the job");
  }
  finished_ = true;
  finished_at_ = Clock::now();
  close_stdin();
  // The jail has ended: its handle (and the spawner's record of it) can go.
  process_.signal = nullptr;
  process_.wait = nullptr;
  notify();
}

namespace {

// A pipe's capacity. The pumps' buffers are left uninitialised and kept for
// the next jobs (a few per thread): zeroing two fresh 64 KiB buffers a call,
// and glibc giving the memory back to the kernel once they were freed at
// the heap's top (brk, and page faults to take it again), was brig-server's
// largest single cost for a command with no output (~0.05 ms of 0.27).
constexpr std::size_t kBufferSize = 64 * 1024;
constexpr std::size_t kBuffersKept = 8;
thread_local std::vector<std::unique_ptr<char[]>> kept_buffers;

struct PumpBuffer {
  PumpBuffer() {
    if (kept_buffers.empty()) {
      data = std::make_unique_for_overwrite<char[]>(kBufferSize);
    } else {
      data = std::move(kept_buffers.back());
      kept_buffers.pop_back();
    }
  }
  ~PumpBuffer() {
    if (kept_buffers.size() >= kBuffersKept) return;
    try {
      kept_buffers.push_back(std::move(data));
    } catch (const std::bad_alloc&) {  // freed instead
    }
  }
  PumpBuffer(const PumpBuffer&) = delete;
  PumpBuffer& operator=(const PumpBuffer&) = delete;
  std::unique_ptr<char[]> data;
};

}  // namespace

asio::awaitable<void> Job::pump(asio::posix::stream_descriptor& pipe, Stream s) {
  const PumpBuffer held;
  char* const buffer = held.data.get();
  for (;;) {
    std::error_code ec;
    const std::size_t n = co_await pipe.async_read_some(
        asio::buffer(buffer, kBufferSize), asio::redirect_error(asio::use_awaitable, ec));
    if (n > 0 && spool_error_.empty()) {
      if (auto appended = spools_[static_cast<int>(s)].append({buffer, n}); !appended) {
        spool_error_ = appended.error().to_string();
      }
    }
    if (n > 0) notify();
    if (ec) break;  // EOF, or cancelled after the drain grace
  }
  eof_[static_cast<int>(s)] = true;
  notify();
}

asio::awaitable<void> Job::wait_end(asio::posix::stream_descriptor& out,
                                    asio::posix::stream_descriptor& err) {
  outcome_ = co_await process_.wait();
  const Clock::time_point grace = Clock::now() + kDrainGrace;
  while (!(eof_[0] && eof_[1]) && Clock::now() < grace) co_await changed(grace);
  if (!eof_[0]) out.cancel();
  if (!eof_[1]) err.cancel();
}

asio::awaitable<void> Job::changed(Clock::time_point deadline) {
  const auto throw_if_cancelled = [](asio::cancellation_state state) {
    if (state.cancelled() != asio::cancellation_type::none) {
      throw std::system_error(asio::error::operation_aborted);
    }
  };
  throw_if_cancelled(co_await asio::this_coro::cancellation_state);
  asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
  waiters_.push_back(&timer);
  // Unregistered however the wait ends, even when the frame is destroyed.
  struct Unregister {
    std::vector<asio::steady_timer*>& waiters;
    asio::steady_timer* timer;
    ~Unregister() { std::erase(waiters, timer); }
  } unregister{waiters_, &timer};
  std::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  throw_if_cancelled(co_await asio::this_coro::cancellation_state);
}

void Job::notify() {
  for (asio::steady_timer* t : waiters_) t->cancel();
}

int Job::signal(int sig) {
  if (finished_ || outcome_ || !process_.signal) return ESRCH;
  return process_.signal(sig);
}

void Job::kill() {
  if (finished_) return;
  kill_requested_ = true;
  signal(SIGKILL);
}

void Job::abandon() {
  abandoned_ = true;
  kill();
}

Result<Job::StdinWrite> Job::write_stdin(std::string data, bool eof) {
  if (finished_) return std::unexpected(Error{"write stdin", id_, "the job has finished"});
  if (!stdin_ && !stdin_error_.empty()) {
    return std::unexpected(Error{"write stdin", id_, stdin_error_});
  }
  if (!stdin_ || stdin_eof_) {
    return std::unexpected(
        Error{"write stdin", id_,
              stdin_eof_ ? "stdin was already closed (eof)"
                         : "the job has no open stdin; start it with exec stdin_open: true"});
  }
  if (stdin_queue_.size() + data.size() > kMaxStdinPending) {
    return std::unexpected(Error{
        "write stdin", id_,
        fmt::format("{} bytes are still waiting for the command to read them; at most {} may be "
                    "pending",
                    stdin_queue_.size(), kMaxStdinPending)});
  }
  StdinWrite w;
  w.queued = data.size();
  stdin_queue_ += data;
  stdin_eof_ = eof;
  w.pending = stdin_queue_.size();
  if (!stdin_writing_) {
    stdin_writing_ = true;
    asio::co_spawn(stdin_->get_executor(), write_stdin_loop(shared_from_this()), asio::detached);
  }
  return w;
}

asio::awaitable<void> Job::write_stdin_loop([[maybe_unused]] std::shared_ptr<Job> self) {
  while (stdin_ && !stdin_queue_.empty()) {
    const std::string chunk = std::move(stdin_queue_);
    stdin_queue_.clear();
    std::error_code ec;
    co_await asio::async_write(*stdin_, asio::buffer(chunk),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      stdin_error_ = ec == asio::error::broken_pipe ? "the command closed its stdin"
                                                    : "writing stdin failed: " + ec.message();
      stdin_queue_.clear();
      close_stdin();
    }
  }
  stdin_writing_ = false;
  if (stdin_eof_) close_stdin();
}

void Job::close_stdin() {
  if (!stdin_) return;
  std::error_code ignored;
  stdin_->close(ignored);
  stdin_.reset();
}

}  // namespace brig::exec
