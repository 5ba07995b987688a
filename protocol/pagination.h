// Opaque tools/list cursors. Internal to protocol/.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace brig::protocol {

// The nextCursor for a page that starts at offset.
std::string make_cursor(std::size_t offset);

// The offset a cursor from make_cursor() stands for; empty when the text is
// not such a cursor or points outside (0, total).
std::optional<std::size_t> read_cursor(std::string_view cursor, std::size_t total);

}  // namespace brig::protocol
