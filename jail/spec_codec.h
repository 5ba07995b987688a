// spec_codec: JailSpec + ExecRequest, Outcome and Error as compact bytes, for
// the socket between brig-server and brig-spawner. The jail layer has no
// JSON, and the spawner must stay lean, so this is a small hand-written
// format: little-endian integers, u32-length-prefixed strings and lists, and
// one version byte in front of every encoded value. Decoding checks every
// length against what is left and every enum against its range, and fails
// with an Error (never a crash) on truncated, trailing or garbled bytes: the
// spawner trusts brig-server, but a bug on either side must not become memory
// corruption in the process that clones jails.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "jail/base/error.h"
#include "jail/outcome.h"
#include "jail/spec.h"

namespace brig::jail {

// Bumped whenever the layout changes: brig-server and brig-spawner come from
// one build, so a mismatch means a stale binary next to a new one.
inline constexpr std::uint8_t kCodecVersion = 5;

namespace codec {

// Appends values to a byte string.
class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void str(std::string_view s);
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads values back; the first failure sticks, so a decoder may read on and
// check ok() once at the end (later reads return zeros).
class Reader {
 public:
  Reader(std::string_view in, const char* what) : in_(in), what_(what) {}
  std::uint8_t u8();
  bool boolean();
  std::uint32_t u32();
  std::uint64_t u64();
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  std::string str();
  // A list length: fails if the rest of the input cannot hold `count`
  // elements of at least `min_size` bytes each (no huge reserve on garbage).
  std::uint32_t count(std::size_t min_size);
  // An enum stored as u8, checked against its last value.
  template <class E>
  E enumeration(E last) {
    const std::uint8_t v = u8();
    if (v > static_cast<std::uint8_t>(last))
      fail("enum value " + std::to_string(v) + " out of range");
    return ok() ? static_cast<E>(v) : E{};
  }
  void fail(std::string why);
  bool ok() const { return error_.empty(); }
  std::size_t left() const { return in_.size() - pos_; }
  // Fails on bytes left over; returns the first failure, if any.
  Result<void> finish();

 private:
  bool need(std::size_t n);
  std::string_view in_;
  std::size_t pos_ = 0;
  const char* what_;
  std::string error_;
};

}  // namespace codec

// The spawn request. The stdio fds are not encoded (an fd number means
// nothing in another process): they decode as -1 and travel separately.
std::string encode_spawn(const JailSpec& spec, const ExecRequest& request);
Result<std::pair<JailSpec, ExecRequest>> decode_spawn(std::string_view bytes);

// How a jail ended. Of the rusage, the fields Linux fills in: user and
// system time, max RSS, page faults, block I/O and context switches.
std::string encode_outcome(const Outcome& outcome);
Result<Outcome> decode_outcome(std::string_view bytes);

// An Error, for a spawn the spawner refused.
std::string encode_error(const Error& error);
Result<Error> decode_error(std::string_view bytes);

}  // namespace brig::jail
