// A temporary directory for one test, removed with everything in it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "server/files/op.h"

namespace brig::files::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/rel
  std::string at(std::string_view rel) const { return path_ + "/" + std::string(rel); }
  // Writes `bytes` to path()/rel with permission bits `mode`.
  void write(std::string_view rel, std::string_view bytes, mode_t mode = 0644) const;
  // The bytes of path()/rel; fails the test if it cannot be read.
  std::string read(std::string_view rel) const;
  // Names in path()/rel (or path()), sorted.
  std::vector<std::string> names(std::string_view rel = "") const;

 private:
  std::string path_;
};

// An OpContext for the directory: a minute's deadline and max_bytes.
files::OpContext context_for(const TempDir& dir, std::size_t max_bytes = 1 << 20);

// True when the test runs with root's power over file permissions.
bool running_as_root();

}  // namespace brig::files::testing
