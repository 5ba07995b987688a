// A whole file in one reusable buffer: search reads each file in a single
// pass of read(2) calls and scans it as one block, never line by line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/files/aligned_bytes.h"

namespace brig::search {

class FileBuffer {
 public:
  enum class Status { ok, too_large, unreadable };

  // Reads dir_fd/name (not following a symlink) up to max_bytes; the view
  // stays valid until the next read. On `unreadable`, error() says why.
  Status read(int dir_fd, const char* name, std::size_t max_bytes);
  // Reads the open file `fd` from its current offset, as read() does.
  Status read_fd(int fd, std::size_t max_bytes);

  std::string_view data() const { return {data_.get(), size_}; }
  const std::string& error() const { return error_; }

 private:
  bool grow(std::size_t at_least, std::size_t at_most);

  files::AlignedBytes data_;  // page-aligned: read(2) copies into it at full speed
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  std::string error_;
};

}  // namespace brig::search
