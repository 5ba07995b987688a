#include "server/policy/units.h"

#include <array>
#include <cctype>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace brig::policy {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads the leading decimal digits of `text` into *value; returns how many
// characters were read (0 when none, or on overflow).
size_t read_number(std::string_view text, uint64_t* value) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return 0;
    v = v * 10 + digit;
  }
  *value = v;
  return i;
}

constexpr std::array<std::pair<std::string_view, int>, 10> kSizeUnits = {{
    {"", 0},
    {"b", 0},
    {"k", 10},
    {"kib", 10},
    {"m", 20},
    {"mib", 20},
    {"g", 30},
    {"gib", 30},
    {"t", 40},
    {"tib", 40},
}};

constexpr uint64_t kMs = 1, kSecond = 1000, kMinute = 60 * kSecond, kHour = 60 * kMinute,
                   kDay = 24 * kHour;

}  // namespace

std::expected<uint64_t, std::string> parse_size(std::string_view text) {
  const std::string example =
      "write a whole number with a binary unit, like \"512MiB\" or \"2GiB\"";
  uint64_t number = 0;
  const size_t digits = read_number(text, &number);
  if (digits == 0) return std::unexpected(fmt::format("\"{}\" is not a size; {}", text, example));
  std::string unit = lower(text.substr(digits));
  if (unit.starts_with('.')) {
    return std::unexpected(fmt::format(
        "\"{}\": fractions are not supported; {} (1.5GiB = \"1536MiB\")", text, example));
  }
  int shift = -1;
  for (const auto& [name, s] : kSizeUnits) {
    if (unit == name) shift = s;
  }
  if (shift < 0) {
    if (unit == "kb" || unit == "mb" || unit == "gb" || unit == "tb") {
      return std::unexpected(
          fmt::format("\"{}\" is ambiguous (decimal or binary?); write \"{}{}iB\" for binary units",
                      text, text.substr(0, digits),
                      static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])))));
    }
    return std::unexpected(
        fmt::format("\"{}\" has an unknown unit \"{}\"; {} (units: B, KiB, MiB, "
                    "GiB, TiB)",
                    text, text.substr(digits), example));
  }
  if (shift > 0 && number > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return std::unexpected(fmt::format("\"{}\" is too large", text));
  }
  return number << shift;
}

std::expected<std::chrono::milliseconds, std::string> parse_duration(std::string_view text) {
  const std::string example = "write a number with a unit, like \"30s\", \"10m\" or \"1h30m\"";
  if (text.empty()) return std::unexpected("an empty duration; " + example);
  uint64_t total = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    uint64_t number = 0;
    const size_t digits = read_number(rest, &number);
    if (digits == 0)
      return std::unexpected(fmt::format("\"{}\" is not a duration; {}", text, example));
    rest.remove_prefix(digits);
    size_t unit_len = 0;
    while (unit_len < rest.size() && std::isalpha(static_cast<unsigned char>(rest[unit_len])))
      ++unit_len;
    const std::string unit = lower(rest.substr(0, unit_len));
    rest.remove_prefix(unit_len);
    uint64_t scale = 0;
    if (unit == "ms")
      scale = kMs;
    else if (unit == "s")
      scale = kSecond;
    else if (unit == "m" || unit == "min")
      scale = kMinute;
    else if (unit == "h")
      scale = kHour;
    else if (unit == "d")
      scale = kDay;
    else if (unit.empty())
      return std::unexpected(fmt::format("\"{}\" has no unit; {}", text, example));
    else
      return std::unexpected(fmt::format(
          "\"{}\" has an unknown unit \"{}\"; {} (units: ms, s, m, h, d)", text, unit, example));
    if (number > (std::numeric_limits<uint64_t>::max() - total) / scale)
      return std::unexpected(fmt::format("\"{}\" is too long", text));
    total += number * scale;
  }
  if (total > static_cast<uint64_t>(std::numeric_limits<std::chrono::milliseconds::rep>::max()))
    return std::unexpected(fmt::format("\"{}\" is too long", text));
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(total));
}

std::string format_size(uint64_t bytes) {
  static constexpr std::array<std::pair<int, std::string_view>, 4> kUnits = {
      {{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}}};
  for (const auto& [shift, name] : kUnits) {
    const uint64_t unit = uint64_t{1} << shift;
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, name);
  }
  return fmt::format("{}B", bytes);
}

std::string format_duration(std::chrono::milliseconds duration) {
  uint64_t left = static_cast<uint64_t>(duration.count());
  if (left == 0) return "0s";
  static constexpr std::array<std::pair<uint64_t, std::string_view>, 5> kUnits = {
      {{kDay, "d"}, {kHour, "h"}, {kMinute, "m"}, {kSecond, "s"}, {kMs, "ms"}}};
  std::string out;
  for (const auto& [scale, name] : kUnits) {
    if (left >= scale) {
      out += fmt::format("{}{}", left / scale, name);
      left %= scale;
    }
  }
  return out;
}

}  // namespace brig::policy
