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
  // append(bytes), then every frame to on_frame(kind, line) in order, as
  // next() would give them; but a line that lies whole inside bytes is passed
  // as a view into bytes instead of being copied and queued (a pipelining
  // client sends hundreds per read). on_frame returns false to stop: the rest
  // of bytes is dropped. Call only while next() has nothing to give.
  template <typename OnFrame>
  void feed(std::string_view bytes, OnFrame&& on_frame);

  std::size_t max_line_bytes() const { return max_; }
  // Bytes of the unfinished last line currently held (0 while skipping).
  std::size_t buffered_bytes() const { return partial_.size(); }

 private:
  void finish_line();
  static bool blank(std::string_view s);

  std::size_t max_;
  std::string partial_;      // the unfinished last line
  bool skipping_ = false;    // inside an over-long line, already reported
  std::deque<Frame> ready_;  // complete frames not yet taken
};

template <typename OnFrame>
void LineFramer::feed(std::string_view bytes, OnFrame&& on_frame) {
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos || skipping_ || !partial_.empty()) {
      // A line begun in an earlier chunk, or one not ended yet: append()'s way.
      append(nl == std::string_view::npos ? bytes : bytes.substr(0, nl + 1));
      while (!ready_.empty()) {
        Frame f = next();
        if (!on_frame(f.kind, std::string_view(f.line))) return;
      }
      if (nl == std::string_view::npos) return;
      bytes.remove_prefix(nl + 1);
      continue;
    }
    // The checks append() and finish_line() make, on the view.
    std::string_view line = bytes.substr(0, nl);
    bytes.remove_prefix(nl + 1);
    if (line.size() > max_ + 1) {
      if (!on_frame(Frame::Kind::too_long, std::string_view())) return;
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_) {
      if (!on_frame(Frame::Kind::too_long, std::string_view())) return;
    } else if (!blank(line)) {
      if (!on_frame(Frame::Kind::line, line)) return;
    }
  }
}

}  // namespace brig::protocol
