// The list-valued keys: `key` replaces the inherited list, `key_add`
// appends to it, and an entry already there is not added twice.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "server/policy/policy.h"
#include "server/policy/reader.h"

namespace brig::policy {

// Why a path cannot be in a list, or nullopt.
using PathProblem = std::optional<std::string> (*)(const std::string&);

// Paths, or { path = "...", optional = true } tables (read_only, read_write,
// dangerously_devices). A path listed twice is required if either entry is.
void read_path_rules(Reader& r, std::vector<PathRule>& rules, const Setting& s,
                     PathProblem problem = nullptr);

// Path strings (hidden).
void read_paths(Reader& r, std::vector<std::string>& paths, const Setting& s,
                std::string_view example);

// Enum names from `table`. `hint` may explain a value refused on purpose.
template <class E, size_t N, class Hint>
void read_enum_list(Reader& r, std::vector<E>& out, const Setting& s,
                    const std::array<std::string_view, N>& table, Hint hint) {
  const toml::array* a = r.list(s.value, s.name, fmt::format("[\"{}\"]", table[0]));
  if (a == nullptr) return;
  if (!s.add) out.clear();
  for (const toml::node& e : *a) {
    if (const auto* text = e.as_string()) {
      if (auto why = hint(text->get())) {
        r.error(e, *why);
        continue;
      }
    }
    if (auto v = r.enumerated<E>(e, s.name + " entries", table)) {
      if (std::find(out.begin(), out.end(), *v) == out.end()) out.push_back(*v);
    }
  }
  r.note(s.base, s.value);
}

template <class E, size_t N>
void read_enum_list(Reader& r, std::vector<E>& out, const Setting& s,
                    const std::array<std::string_view, N>& table) {
  read_enum_list(r, out, s, table, [](std::string_view) { return std::optional<std::string>(); });
}

}  // namespace brig::policy
