#include "protocol/pagination.h"

#include <charconv>

namespace brig::protocol {

namespace {

// A prefix makes a cursor recognisable in logs and keeps clients from
// passing a bare number and having it accepted.
constexpr std::string_view kPrefix = "tools@";

}  // namespace

std::string make_cursor(std::size_t offset) {
  return std::string(kPrefix) + std::to_string(offset);
}

std::optional<std::size_t> read_cursor(std::string_view cursor, std::size_t total) {
  if (!cursor.starts_with(kPrefix)) return std::nullopt;
  cursor.remove_prefix(kPrefix.size());
  std::size_t offset = 0;
  auto [end, ec] = std::from_chars(cursor.data(), cursor.data() + cursor.size(), offset);
  if (ec != std::errc() || end != cursor.data() + cursor.size() || cursor.empty()) {
    return std::nullopt;
  }
  // A leading zero would make two spellings of one cursor.
  if (cursor.size() > 1 && cursor.front() == '0') return std::nullopt;
  if (offset == 0 || offset >= total) return std::nullopt;
  return offset;
}

}  // namespace brig::protocol
