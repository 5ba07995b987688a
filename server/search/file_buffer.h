// A whole file in one reusable buffer: search reads each file in a single
// pass of read(2) calls and scans it as one block, never line by line.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

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

  // Page-aligned: the kernel copies a file's pages into it several times
  // faster than to an address 16 bytes past a line boundary, where malloc
  // puts large blocks (tests/bench/README.md, "Reads into aligned buffers").
  struct AlignedDelete {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, AlignedDelete> data_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
  std::string error_;
};

}  // namespace brig::search
