// Excerpt: the part of a stream a tool result shows. Output that fits the
// cap is shown whole; longer output keeps its head and its tail (where a
// build's error or a test summary usually is) and says how much was left out
// and where it starts, so that `job read` can fetch it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/exec/spool.h"

namespace brig::exec {

struct Excerpt {
  std::string head;              // valid UTF-8 (repaired)
  std::string tail;              // valid UTF-8; empty when nothing was dropped
  std::uint64_t dropped = 0;     // bytes between head and tail not shown
  std::uint64_t gap_offset = 0;  // stream offset of the first dropped byte
  std::uint64_t end = 0;         // the stream's size when the excerpt was made

  // head, a line saying what was dropped (when anything was), and tail.
  // `read_hint` names how to read the dropped bytes ("job read ...").
  std::string text(const std::string& read_hint) const;
};

// Bytes [from, spool.size()) of spool within max_bytes: all of them when they
// fit, else about half of max_bytes from the start and the rest from the end,
// both cut at character boundaries. Bytes the spool no longer keeps count as
// dropped.
Excerpt excerpt(const Spool& spool, std::uint64_t from, std::size_t max_bytes);

}  // namespace brig::exec
