#include "server/egress/flow.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace brig::egress {

namespace {

// As much as one default pipe holds: a splice moves at most this much.
constexpr std::size_t kPipeBytes = 64 * 1024;

}  // namespace

bool PipePool::take(Pipe& out) {
  if (!free_.empty()) {
    out = std::move(free_.back());
    free_.pop_back();
    return true;
  }
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  out.read.reset(fds[0]);
  out.write.reset(fds[1]);
  return true;
}

void PipePool::give(Pipe pipe) {
  if (free_.size() < keep_) free_.push_back(std::move(pipe));
}

void Flow::queue(std::string_view bytes, bool counted) {
  // Uncounted bytes are only ever queued first (brig's own "200"), so they
  // are the leading part of what is still to be sent.
  if (!counted) uncounted_ += bytes.size();
  pending_.append(bytes);
}

Flow::Step Flow::pump(Endpoint& src, Endpoint& dst, PipePool& pipes, std::span<char> scratch,
                      int budget) {
  for (int reads = 0;;) {
    Io io = Io::blocked;
    if (sent_ < pending_.size()) {
      io = write_pending(dst);
    } else if (in_pipe_ > 0) {
      io = write_pipe(dst);
    } else if (src.readable && !src_eof_ && (!ended_ || discard_)) {
      if (reads++ == budget) return Step::again;
      io = splice_ ? read_splice(src, pipes) : read_buffered(src, scratch);
    }
    if (io == Io::error) return Step::error;
    if (io == Io::blocked) break;
  }
  if (in_pipe_ == 0 && pipe_.read) pipes.give(std::move(pipe_));
  finish(dst);
  return Step::idle;
}

// EAGAIN clears the endpoint's readiness until epoll reports it again.
static bool would_block(bool& ready) {
  if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
  ready = false;
  return true;
}

Flow::Io Flow::write_pending(Endpoint& dst) {
  if (!dst.writable) return Io::blocked;
  ssize_t n = ::send(dst.fd.get(), pending_.data() + sent_, pending_.size() - sent_, MSG_NOSIGNAL);
  if (n < 0) {
    if (errno == EINTR) return Io::progress;
    return would_block(dst.writable) ? Io::blocked : Io::error;
  }
  auto written = static_cast<std::size_t>(n);
  std::size_t free_bytes = std::min(written, uncounted_);
  uncounted_ -= free_bytes;
  bytes_ += written - free_bytes;
  sent_ += written;
  if (sent_ == pending_.size()) {
    // Drained: an idle connection keeps no buffer.
    std::string().swap(pending_);
    sent_ = 0;
  }
  return Io::progress;
}

Flow::Io Flow::write_pipe(Endpoint& dst) {
  if (!dst.writable) return Io::blocked;
  ssize_t n = ::splice(pipe_.read.get(), nullptr, dst.fd.get(), nullptr, in_pipe_,
                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (n < 0) {
    if (errno == EINTR) return Io::progress;
    return would_block(dst.writable) ? Io::blocked : Io::error;
  }
  in_pipe_ -= static_cast<std::size_t>(n);
  bytes_ += static_cast<std::size_t>(n);
  return Io::progress;
}

Flow::Io Flow::read_splice(Endpoint& src, PipePool& pipes) {
  if (!pipe_.read && !pipes.take(pipe_)) return Io::error;
  // Only into an empty pipe: then EAGAIN can only mean the socket is empty,
  // never that the pipe is full.
  ssize_t n = ::splice(src.fd.get(), nullptr, pipe_.write.get(), nullptr, kPipeBytes,
                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (n < 0) {
    if (errno == EINTR) return Io::progress;
    return would_block(src.readable) ? Io::blocked : Io::error;
  }
  if (n == 0)
    src_eof_ = ended_ = true;
  else
    in_pipe_ += static_cast<std::size_t>(n);
  return Io::progress;
}

Flow::Io Flow::read_buffered(Endpoint& src, std::span<char> scratch) {
  ssize_t n = ::recv(src.fd.get(), scratch.data(), scratch.size(), 0);
  if (n < 0) {
    if (errno == EINTR) return Io::progress;
    return would_block(src.readable) ? Io::blocked : Io::error;
  }
  if (n == 0) return end_of_source();
  if (discard_) return Io::progress;
  std::size_t keep = static_cast<std::size_t>(n);
  if (filter_) {
    keep = filter_->pass(scratch.first(keep));
    if (filter_->failed()) return Io::error;
    if (filter_->done()) ended_ = discard_ = true;
  }
  pending_.append(scratch.data(), keep);
  return Io::progress;
}

Flow::Io Flow::end_of_source() {
  src_eof_ = true;
  if (!ended_ && filter_) {
    filter_->end();
    if (filter_->failed()) return Io::error;
  }
  ended_ = true;
  return Io::progress;
}

void Flow::finish(Endpoint& dst) {
  // A source's EOF is passed on, so request/response protocols through a
  // tunnel end cleanly; a message the filter ended is not (the client may
  // still be sending what is dropped, and some servers take a half-close
  // for an aborted request).
  if (!ended_ || discard_ || shut_ || !drained()) return;
  ::shutdown(dst.fd.get(), SHUT_WR);
  shut_ = true;
}

void Flow::release(PipePool& pipes) {
  if (pipe_.read && in_pipe_ == 0) pipes.give(std::move(pipe_));
  pipe_ = Pipe{};
}

}  // namespace brig::egress
