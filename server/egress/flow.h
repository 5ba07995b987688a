// Flow: one direction of a relayed connection (jail -> upstream or back),
// moved on the relay's edge-triggered epoll loop. Bulk bytes go through a
// pipe with splice(2), so they never enter user space; bytes that must be
// looked at (a plain HTTP request's body, its response) go through one
// shared scratch buffer and a Filter. Nothing is buffered unboundedly: a
// flow reads its source only when what it read before has been written, so
// a slow reader stops its writer (backpressure through the kernel's socket
// buffers). An idle flow holds no buffer and no pipe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/unique_fd.h"

namespace brig::egress {

// One socket of a relayed connection, and what the last epoll event said of
// it (edge-triggered: true until a call returns EAGAIN).
struct Endpoint {
  UniqueFd fd;
  bool readable = false;
  bool writable = false;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// Empty pipes for reuse: a connection takes one only while bytes are in
// flight, so idle connections cost no pipe (no fds, no pipe buffer).
class PipePool {
 public:
  explicit PipePool(std::size_t keep) : keep_(keep) {}
  // An empty pipe; nullopt when the process is out of fds or pipe memory.
  bool take(Pipe& out);
  void give(Pipe pipe);  // must be empty

 private:
  std::size_t keep_;
  std::vector<Pipe> free_;
};

// Looks at the bytes of a buffered flow: how many of `bytes` go on (the
// rest and everything after are dropped), and whether the message is over.
class Filter {
 public:
  virtual ~Filter() = default;
  // Returns the count of leading bytes to forward; sets done() once the
  // message ended or it failed (failed()).
  virtual std::size_t pass(std::span<const char> bytes) = 0;
  // The source ended (EOF): a message delimited by the close ends here.
  virtual void end() = 0;
  virtual bool done() const = 0;
  virtual bool failed() const = 0;
};

class Flow {
 public:
  enum class Step {
    idle,   // waits for an event
    again,  // used its budget with more to do: call again after the others
    error,  // a socket failed: close the connection
  };

  // splice: the bulk path; otherwise bytes are read into `scratch` and
  // passed through `filter` (may be null: everything passes).
  void set_splice(bool on) { splice_ = on; }
  void set_filter(Filter* filter) { filter_ = filter; }
  // Bytes to write before any read from the source; `counted` says whether
  // they count in bytes().
  void queue(std::string_view bytes, bool counted);

  // Moves bytes from `src` to `dst` until blocked or `budget` reads.
  Step pump(Endpoint& src, Endpoint& dst, PipePool& pipes, std::span<char> scratch, int budget);

  // The source ended (EOF, or the filter's message ended) and everything
  // read was written.
  bool finished() const { return ended_ && drained(); }
  // finished() and the end was passed on as shutdown(SHUT_WR).
  bool shut() const { return shut_; }
  bool drained() const { return pending_.size() == sent_ && in_pipe_ == 0; }
  std::uint64_t bytes() const { return bytes_; }
  // Give the pipe back when the connection closes (dropped if not empty).
  void release(PipePool& pipes);

 private:
  enum class Io { progress, blocked, error };
  Io write_pending(Endpoint& dst);
  Io write_pipe(Endpoint& dst);
  Io read_splice(Endpoint& src, PipePool& pipes);
  Io read_buffered(Endpoint& src, std::span<char> scratch);
  Io end_of_source();
  void finish(Endpoint& dst);

  bool splice_ = false;
  Filter* filter_ = nullptr;
  std::string pending_;  // user-space bytes to write, from sent_ on
  std::size_t sent_ = 0;
  std::size_t uncounted_ = 0;  // leading bytes of pending_ not counted
  Pipe pipe_;
  std::size_t in_pipe_ = 0;
  bool src_eof_ = false;  // the source said EOF
  bool ended_ = false;    // no more bytes will be forwarded
  bool discard_ = false;  // the filter's message is over: later bytes are read and dropped
  bool shut_ = false;
  std::uint64_t bytes_ = 0;
};

}  // namespace brig::egress
