#include "server/exec/excerpt.h"

#include <fmt/format.h>

#include "server/exec/utf8_repair.h"

namespace brig::exec {
namespace {

// Reads [from, from + n) as far as the spool keeps it; the rest is left out.
std::string kept_bytes(const Spool& spool, std::uint64_t from, std::size_t n) {
  if (!spool.kept(from)) return {};
  auto bytes = spool.read(from, n);
  return bytes ? std::move(*bytes) : std::string();
}

}  // namespace

Excerpt excerpt(const Spool& spool, std::uint64_t from, std::size_t max_bytes) {
  Excerpt e;
  e.end = spool.size();
  from = std::min(from, e.end);
  const std::uint64_t length = e.end - from;
  std::string head, tail;
  if (length <= max_bytes) {
    head = kept_bytes(spool, from, static_cast<std::size_t>(length));
  } else {
    const std::size_t head_max = max_bytes / 2;
    const std::size_t tail_max = max_bytes - head_max;
    head = kept_bytes(spool, from, head_max);
    head.resize(complete_prefix_length(head));
    tail = kept_bytes(spool, e.end - tail_max, tail_max);
    tail.erase(0, leading_continuation_bytes(tail));
  }
  e.gap_offset = from + head.size();
  e.dropped = length - head.size() - tail.size();
  e.head = repair_utf8(head);
  e.tail = repair_utf8(tail);
  return e;
}

std::string Excerpt::text(const std::string& read_hint) const {
  if (dropped == 0) return head + tail;
  std::string out = head;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += fmt::format("[... {} bytes left out here, from offset {}; {} ...]\n", dropped, gap_offset,
                     read_hint);
  out += tail;
  return out;
}

}  // namespace brig::exec
