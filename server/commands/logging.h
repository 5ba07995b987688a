// Logging: brig's logs go to stderr through spdlog, never to stdout (stdout
// carries only JSON-RPC).
#pragma once

#include <array>
#include <string_view>

#include <spdlog/common.h>

namespace brig::commands {

// The --log-level names, least to most severe, then "off".
inline constexpr std::array<std::string_view, 7> kLogLevelNames = {
    "trace", "debug", "info", "warn", "error", "critical", "off"};

// Makes spdlog's default logger a single-threaded stderr logger (colored on a
// terminal) at level; level_name is one of kLogLevelNames (anything else: info).
void init_logging(std::string_view level_name);

// The spdlog level for a --log-level name; info for an unknown name.
spdlog::level::level_enum log_level_from_name(std::string_view name);

}  // namespace brig::commands
