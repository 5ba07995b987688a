#include "server/commands/logging.h"

#include <memory>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace brig::commands {

spdlog::level::level_enum log_level_from_name(std::string_view name) {
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "warn") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  if (name == "critical") return spdlog::level::critical;
  if (name == "off") return spdlog::level::off;
  return spdlog::level::info;
}

void init_logging(std::string_view level_name) {
  // Not registered by name, so a second call (tests) just replaces it.
  auto logger = std::make_shared<spdlog::logger>(
      "brig", std::make_shared<spdlog::sinks::stderr_color_sink_st>());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ brig[%P]: %v");
  logger->set_level(log_level_from_name(level_name));
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace brig::commands
