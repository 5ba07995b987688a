#include "protocol/framing.h"

namespace brig::protocol {

bool LineFramer::blank(std::string_view s) {
  return s.find_first_not_of(" \t\r") == std::string_view::npos;
}

LineFramer::LineFramer(std::size_t max_line_bytes) : max_(max_line_bytes) {}

void LineFramer::append(std::string_view bytes) {
  while (!bytes.empty()) {
    std::size_t nl = bytes.find('\n');
    std::string_view piece = bytes.substr(0, nl);
    if (skipping_) {
      if (nl == std::string_view::npos) return;  // still inside the long line
      skipping_ = false;
    } else if (partial_.size() + piece.size() > max_ + 1) {
      // +1: room for the '\r' of a CRLF ending, not yet known to be one.
      ready_.push_back(Frame{Frame::Kind::too_long, {}});
      partial_.clear();
      partial_.shrink_to_fit();
      skipping_ = nl == std::string_view::npos;
    } else {
      partial_.append(piece);
      if (nl != std::string_view::npos) finish_line();
    }
    if (nl == std::string_view::npos) return;
    bytes.remove_prefix(nl + 1);
  }
}

void LineFramer::finish_line() {
  if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
  if (partial_.size() > max_) {
    ready_.push_back(Frame{Frame::Kind::too_long, {}});
  } else if (!blank(partial_)) {
    ready_.push_back(Frame{Frame::Kind::line, std::move(partial_)});
  }
  partial_.clear();
}

Frame LineFramer::next() {
  if (ready_.empty()) return Frame{Frame::Kind::need_more, {}};
  Frame f = std::move(ready_.front());
  ready_.pop_front();
  return f;
}

}  // namespace brig::protocol
