// Sizes ("512MiB") and durations ("30m", "1h30m") as policies write them.
// Parsing failures say what to write instead, for the loader's messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace brig::policy {

// "512MiB", "2GiB", "64K", "4096" (bytes). Units are binary and
// case-insensitive: B, K/KiB, M/MiB, G/GiB, T/TiB. "GB" and friends are
// refused as ambiguous. Error = a sentence saying what to write instead.
std::expected<uint64_t, std::string> parse_size(std::string_view text);

// "30s", "10m", "1h30m", "250ms"; units ms, s, m, h, d; no bare numbers.
// Error = a sentence saying what to write instead.
std::expected<std::chrono::milliseconds, std::string> parse_duration(std::string_view text);

// The shortest exact form: 536870912 -> "512MiB", 1000 -> "1000B".
std::string format_size(uint64_t bytes);

// The shortest exact form: 5400000 ms -> "1h30m", 1500 ms -> "1s500ms".
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace brig::policy
