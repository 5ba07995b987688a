// Opening and reading the regular files the file tools work on.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"

namespace brig::files {

struct OpenFile {
  UniqueFd fd;
  struct stat st {};
};

// Opens `path` for reading, following symlinks (the kernel decides what they
// may reach), and fails unless it is a regular file: a directory points to
// list_directory, a fifo or device is refused (reading one could block or
// never end). `what` names the operation in errors.
Result<OpenFile> open_regular(const std::string& path, std::string_view what);

// Up to max_bytes from fd's current offset; stops early at end of file.
Result<std::string> read_up_to(int fd, std::size_t max_bytes, std::string_view what,
                               const std::string& path);

}  // namespace brig::files
