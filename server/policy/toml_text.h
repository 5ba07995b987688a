// Policy values written as TOML, for `brig policy show`: the text loads back
// to the same value.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/policy/policy.h"

namespace brig::policy {

// `text` as a TOML basic string, quotes included; "$" doubled when
// `escape_dollar` so that loading expands it back to "$".
std::string toml_string(std::string_view text, bool escape_dollar);

std::string bool_text(bool b);
// One entry a line; an optional one as { path = "...", optional = true }.
std::string path_rules_text(const std::vector<PathRule>& rules);
std::string paths_text(const std::vector<std::string>& paths);
// ["a", "b"] on one line; no "$" is escaped.
std::string names_text(const std::vector<std::string>& names);
// A tmpfs size; 0 says what the kernel makes of it.
std::string tmpfs_size_text(uint64_t bytes);
// nullopt is "unlimited".
std::string size_limit_text(const std::optional<uint64_t>& bytes);
std::string count_limit_text(const std::optional<uint64_t>& n);
std::string duration_limit_text(const std::optional<std::chrono::milliseconds>& d);

// Enum values by their names in a names:: table.
template <class E, size_t N>
std::string name_text(E e, const std::array<std::string_view, N>& table) {
  return toml_string(table[static_cast<size_t>(e)], /*escape_dollar=*/false);
}
template <class E, size_t N>
std::string names_text(const std::vector<E>& values, const std::array<std::string_view, N>& table) {
  std::vector<std::string> names;
  for (E e : values) names.emplace_back(table[static_cast<size_t>(e)]);
  return names_text(names);
}

}  // namespace brig::policy
