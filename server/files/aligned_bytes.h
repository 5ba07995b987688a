// Page-aligned byte blocks for read(2). The kernel copies a file's pages
// into an address 16 bytes past a 32-byte boundary, where malloc puts
// large blocks, at about half the speed it copies into an aligned one
// (tests/bench/README.md, "Issue 16, stop 33").
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace brig::files {

inline constexpr std::align_val_t kReadAlignment{4096};

struct AlignedDelete {
  void operator()(char* p) const { ::operator delete[](p, kReadAlignment); }
};
using AlignedBytes = std::unique_ptr<char, AlignedDelete>;

// `size` bytes starting on a page, uninitialised; null when out of memory.
inline AlignedBytes allocate_aligned(std::size_t size) {
  return AlignedBytes(static_cast<char*>(::operator new[](size, kReadAlignment, std::nothrow)));
}

}  // namespace brig::files
