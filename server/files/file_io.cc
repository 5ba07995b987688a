#include "server/files/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "server/files/atomic_write.h"

namespace brig::files {

Result<OpenFile> open_regular(const std::string& path, std::string_view what) {
  // O_NONBLOCK: opening a fifo must not wait for a writer before fstat can
  // refuse it.
  OpenFile f;
  f.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!f.fd) {
    const int err = errno;
    Error e = sys_error(std::string(what), path, err);
    if (err == ENOENT) e.why = "no such file or directory";
    return std::unexpected(std::move(e));
  }
  if (::fstat(f.fd.get(), &f.st) != 0) {
    return std::unexpected(sys_error(std::string(what), path, errno));
  }
  if (S_ISDIR(f.st.st_mode)) {
    return std::unexpected(
        Error{std::string(what), path, "is a directory; use list_directory to see it", EISDIR});
  }
  if (!S_ISREG(f.st.st_mode)) {
    return std::unexpected(Error{std::string(what), path,
                                 fmt::format("is a {}, not a regular file; brig reads only "
                                             "regular files",
                                             file_type_name(f.st.st_mode)),
                                 EINVAL});
  }
  return f;
}

Result<std::string> read_up_to(int fd, std::size_t max_bytes, std::string_view what,
                               const std::string& path) {
  std::string out;
  constexpr std::size_t kChunk = 1 << 16;
  while (out.size() < max_bytes) {
    const std::size_t want = std::min(kChunk, max_bytes - out.size());
    const std::size_t old = out.size();
    out.resize(old + want);
    const ssize_t n = ::read(fd, out.data() + old, want);
    if (n < 0) {
      out.resize(old);
      if (errno == EINTR) continue;
      return std::unexpected(sys_error(std::string(what), path, errno));
    }
    out.resize(old + static_cast<std::size_t>(n));
    if (n == 0) break;
  }
  return out;
}

}  // namespace brig::files
