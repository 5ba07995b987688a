// Coverage feedback for libFuzzer from GCC's instrumentation.
//
// Debian 12's libFuzzer (clang 14) cannot build brig: libstdc++ 12's
// std::expected needs C++20 features clang 14 lacks (its copy constructor is
// deleted there). So brig is built with g++ 12 and libFuzzer's runtime is
// linked in. GCC instruments with -fsanitize-coverage=trace-pc (a call at the
// start of every basic block) and trace-cmp; libFuzzer 14 only takes its
// coverage from inline 8-bit counters or pc-guards, and its own
// __sanitizer_cov_trace_pc just prints "no longer supported". This file
// replaces that function (tests/fuzz/CMakeLists.txt weakens libFuzzer's copy)
// with AFL's edge scheme: each block's address hashed into a 64 KiB map of
// counters, indexed by (this block ^ previous block >> 1), so that an edge, not
// only a block, is a feature. The map is registered as one module of 8-bit
// counters, which libFuzzer then reads, clears and buckets as it does clang's.
// trace-cmp needs no shim: libFuzzer's __sanitizer_cov_trace_cmp* hooks feed
// its table of recent compares (and -use_value_profile=1) directly.
//
// Built without coverage and without sanitizers: it runs at every block.
#include <cstddef>
#include <cstdint>

extern "C" void __sanitizer_cov_8bit_counters_init(std::uint8_t* start, std::uint8_t* stop);

namespace {

constexpr std::size_t kMapSize = std::size_t{1} << 16;
// Page-aligned: libFuzzer splits a module's counters into page-sized regions.
alignas(4096) std::uint8_t g_counters[kMapSize];
// The previous block's hash, shifted so that A->B and B->A differ. Not
// thread-local: the harnesses are single-threaded, and a TLS access per block
// would cost more than the rare mixed edge from another thread.
std::uintptr_t g_previous = 0;

struct Register {
  Register() { __sanitizer_cov_8bit_counters_init(g_counters, g_counters + kMapSize); }
} g_register;

}  // namespace

extern "C" void __sanitizer_cov_trace_pc() {
  const auto pc = reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
  // Fold the high bits in: blocks of one function differ in the low ones,
  // functions far apart in the high ones.
  const std::uintptr_t current = (pc ^ (pc >> 16)) & (kMapSize - 1);
  ++g_counters[current ^ g_previous];
  g_previous = current >> 1;
}

// GCC's trace-cmp also reports float and double compares, which libFuzzer
// has no hooks for (clang does not emit them): no feedback from those.
extern "C" void __sanitizer_cov_trace_cmpf(float, float) {}
extern "C" void __sanitizer_cov_trace_cmpd(double, double) {}
