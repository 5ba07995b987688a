// Finding a fixed byte string in a buffer fast: two of its rarest bytes are
// looked for together, sixteen positions at a time, and only where both
// sit at the right distance is the whole string compared (the "packed
// pair" idea of ripgrep's memchr crate).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brig::search {

class LiteralFinder {
 public:
  // `needle` must not be empty. With ascii_fold, ASCII letters in it match
  // either case and every other byte matches exactly.
  LiteralFinder(std::string needle, bool ascii_fold);

  // Where the first occurrence at or after `from` starts, or npos.
  std::size_t find(std::string_view haystack, std::size_t from) const;

  const std::string& needle() const { return needle_; }
  bool ascii_fold() const { return fold_; }

 private:
  bool equal_at(const char* p) const;

  std::string needle_;  // lower-cased when folding
  bool fold_;
  std::size_t rare1_ = 0,
              rare2_ = 0;  // offsets of the two rare bytes; rare1_ < rare2_ unless size 1
};

// How common a byte is in source code and text, 0 (rare) to 255 (very
// common); what LiteralFinder and the pattern compiler pick literals by.
unsigned byte_rank(unsigned char c);

}  // namespace brig::search
