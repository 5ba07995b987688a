#include "server/exec/spool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

namespace brig::exec {

Result<Spool> Spool::create(const std::string& name, SpoolLimits limits) {
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (!fd) return std::unexpected(sys_error("create the output spool", name, errno));
  return Spool(std::move(fd), limits);
}

Spool::Spool(UniqueFd fd, SpoolLimits limits)
    : fd_(std::move(fd)), limits_(limits), head_cap_(limits_.head_bytes), held_(limits_.budget) {
  limits_.tail_bytes = std::max<std::size_t>(limits_.tail_bytes, 1);
}

std::uint64_t Spool::head_end() const {
  return std::min(size_, head_cap_);
}

void Spool::evict() {
  fd_.reset();
  std::string().swap(ring_);
  held_.release();
  head_cap_ = 0;
  evicted_ = true;
}

std::uint64_t Spool::tail_begin() const {
  return size_ > limits_.tail_bytes ? size_ - limits_.tail_bytes : 0;
}

Result<void> Spool::append(std::string_view bytes) {
  if (evicted_) {
    size_ += bytes.size();
    return {};
  }
  if (size_ < head_cap_) {
    std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), head_cap_ - size_));
    const std::uint64_t granted = held_.take(n);
    if (granted < n) {
      // The server's budget is full: the head ends here, as at its limit.
      n = static_cast<std::size_t>(granted);
      head_cap_ = size_ + n;
      cut_by_budget_ = true;
    }
    std::size_t done = 0;
    while (done < n) {
      const ssize_t w =
          ::pwrite(fd_.get(), bytes.data() + done, n - done, static_cast<off_t>(size_ + done));
      if (w < 0) {
        if (errno == EINTR) continue;
        return std::unexpected(sys_error("write the output spool", "", errno));
      }
      done += static_cast<std::size_t>(w);
    }
  }
  // The ring grows with the stream until it is full, so that the many short
  // outputs never pay for a full one; while it grows, offset o is at ring_[o].
  const std::size_t cap = limits_.tail_bytes;
  if (ring_.size() < cap) {
    ring_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(cap, size_ + bytes.size())));
  }
  // Only the last cap bytes of a large append can survive in the ring.
  std::string_view keep = bytes.size() > cap ? bytes.substr(bytes.size() - cap) : bytes;
  std::uint64_t at = size_ + (bytes.size() - keep.size());
  while (!keep.empty()) {
    const std::size_t pos = static_cast<std::size_t>(at % cap);
    const std::size_t n = std::min(keep.size(), cap - pos);
    std::copy_n(keep.data(), n, ring_.data() + pos);
    keep.remove_prefix(n);
    at += n;
  }
  size_ += bytes.size();
  return {};
}

Result<std::string> Spool::read(std::uint64_t offset, std::size_t max_bytes) const {
  std::string out;
  if (offset >= size_ || max_bytes == 0) return out;
  if (evicted_) {
    return std::unexpected(Error{
        "read output", fmt::format("offset {}", offset),
        fmt::format("this finished job's output was dropped to make room for newer output: the "
                    "server keeps at most {} bytes of output in all (brig serve {})",
                    limits_.budget ? limits_.budget->limit() : 0, kSpoolBytesOption)});
  }
  if (!kept(offset)) {
    return std::unexpected(Error{
        "read output", fmt::format("offset {}", offset),
        fmt::format("bytes {} to {} were not kept (only the first {} and the last {} bytes of a "
                    "stream are{}); read from offset {} or from {}",
                    head_end(), tail_begin(), head_end(), limits_.tail_bytes,
                    cut_by_budget_ ? fmt::format(", the first cut short because the server's "
                                                 "output budget of {} bytes (brig serve {}) "
                                                 "was full",
                                                 limits_.budget ? limits_.budget->limit() : 0,
                                                 kSpoolBytesOption)
                                   : "",
                    0, tail_begin())});
  }
  const std::uint64_t want_end = std::min<std::uint64_t>(size_, offset + max_bytes);
  std::uint64_t at = offset;
  // From the memfd while in the head and not yet in the ring (the ring holds
  // the same bytes where the two overlap, either source will do).
  if (at < head_end() && at < tail_begin()) {
    const std::uint64_t end = std::min(want_end, head_end());
    out.resize(static_cast<std::size_t>(end - at));
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t r =
          ::pread(fd_.get(), out.data() + done, out.size() - done, static_cast<off_t>(at + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        return std::unexpected(sys_error("read the output spool", "", r < 0 ? errno : EIO));
      }
      done += static_cast<std::size_t>(r);
    }
    at = end;
  }
  if (at < want_end && at >= tail_begin()) {
    const std::size_t cap = limits_.tail_bytes;
    while (at < want_end) {
      const std::size_t pos = static_cast<std::size_t>(at % cap);
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(want_end - at, cap - pos));
      out.append(ring_.data() + pos, n);
      at += n;
    }
  }
  return out;
}

}  // namespace brig::exec
