// LineFramer: bytes in, one message per line out (MCP stdio framing). Pure.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>

namespace brig::protocol {

inline constexpr std::size_t kDefaultMaxLineBytes = 64u << 20;  // 64 MiB

// One result of LineFramer::next().
struct Frame {
  enum class Kind {
    line,       // `line` holds one complete line: no '\n', no trailing '\r'
    too_long,   // a line passed the limit: it is dropped up to its newline; reported once
    need_more,  // nothing complete yet: append more bytes
  };
  Kind kind = Kind::need_more;
  std::string line;  // only for Kind::line
};

// Splits a byte stream into lines. Chunks may split or merge lines anywhere;
// "\r\n" and "\n" both end a line; blank lines (empty or only spaces, tabs
// and '\r') are skipped without a frame. Memory stays bounded by the limit:
// an over-long line is discarded while it streams in, not buffered.
class LineFramer {
 public:
  // max_line_bytes: the longest line accepted, newline and trailing '\r' not counted.
  explicit LineFramer(std::size_t max_line_bytes = kDefaultMaxLineBytes);

  // Feeds bytes; complete lines become available to next().
  void append(std::string_view bytes);
  // The next frame in stream order, or need_more.
  Frame next();

  std::size_t max_line_bytes() const { return max_; }
  // Bytes of the unfinished last line currently held (0 while skipping).
  std::size_t buffered_bytes() const { return partial_.size(); }

 private:
  void finish_line();

  std::size_t max_;
  std::string partial_;      // the unfinished last line
  bool skipping_ = false;    // inside an over-long line, already reported
  std::deque<Frame> ready_;  // complete frames not yet taken
};

}  // namespace brig::protocol
