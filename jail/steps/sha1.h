// SHA-1 (FIPS 180-4) for the git layer: the trailer of an index brig
// rewrites (git_write_back.cc) is the SHA-1 of everything before it, as
// git's own reader checks. Not for security: git's index checksum only
// detects corruption. Async-signal-safe (no allocation), so the jail's init
// can use it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace brig::jail::sha1 {

class Hasher {
 public:
  Hasher();
  void update(const void* data, size_t size);
  // The 20-byte digest; the hasher is spent afterwards.
  void finish(unsigned char out[20]);

 private:
  void block(const unsigned char* p);
  uint32_t h_[5];
  unsigned char buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

}  // namespace brig::jail::sha1
