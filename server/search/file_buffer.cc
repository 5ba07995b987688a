#include "server/search/file_buffer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "jail/base/unique_fd.h"

namespace brig::search {
namespace {

constexpr std::size_t kFirstCapacity = 256 << 10;

}  // namespace

bool FileBuffer::grow(std::size_t at_least, std::size_t at_most) {
  std::size_t cap = std::max(capacity_ * 2, kFirstCapacity);
  while (cap < at_least) cap *= 2;
  cap = std::max(std::min(cap, at_most), at_least);
  files::AlignedBytes bigger = files::allocate_aligned(cap);
  if (!bigger) return false;
  if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
  data_ = std::move(bigger);
  capacity_ = cap;
  return true;
}

FileBuffer::Status FileBuffer::read(int dir_fd, const char* name, std::size_t max_bytes) {
  size_ = 0;
  error_.clear();
  // O_NONBLOCK: a fifo swapped in after the walk listed a regular file must
  // not block the search; O_NOFOLLOW: nor may a symlink swapped in.
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    error_ = std::strerror(errno);
    return Status::unreadable;
  }
  return read_fd(fd.get(), max_bytes);
}

FileBuffer::Status FileBuffer::read_fd(int fd, std::size_t max_bytes) {
  size_ = 0;
  error_.clear();
  while (true) {
    // One byte past the limit tells "exactly max_bytes" from "more".
    if (size_ > max_bytes) return Status::too_large;
    if (size_ == capacity_ && !grow(size_ + 1, max_bytes + 1)) {
      error_ = "out of memory";
      return Status::unreadable;
    }
    const std::size_t want = std::min(capacity_ - size_, max_bytes + 1 - size_);
    const ssize_t n = ::read(fd, data_.get() + size_, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = std::strerror(errno);
      return Status::unreadable;
    }
    if (n == 0) return Status::ok;
    size_ += static_cast<std::size_t>(n);
  }
}

}  // namespace brig::search
