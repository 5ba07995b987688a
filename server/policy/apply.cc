#include "server/policy/apply.h"

#include <algorithm>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "server/policy/keys.h"
#include "server/policy/reader.h"
#include "server/policy/suggest.h"

namespace brig::policy {
namespace {

bool contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The section other than `current` that has a key named `key`, or "".
std::string_view home_section_of(std::string_view key, std::string_view current) {
  for (std::string_view s : section_names()) {
    if (s != current && contains(key_names(s), key)) return s;
  }
  return "";
}

// Why `key` is not a key of `section` ("" for the top level), and what the
// user may have meant.
std::string unknown_key(std::string_view key, std::string_view section) {
  const std::span<const std::string_view> allowed = key_names(section);
  const std::string where = section.empty() ? "at the top level" : fmt::format("in [{}]", section);
  const std::string risky = fmt::format("dangerously_{}", key);
  if (auto guess = closest(key, allowed))
    return fmt::format("unknown key \"{}\" {}; did you mean \"{}\"?", key, where, *guess);
  if (contains(allowed, risky)) {
    return fmt::format(
        "unknown key \"{}\" {}; it is \"{}\", named so because it is a risky opt-in "
        "(policies/README.md)",
        key, where, risky);
  }
  if (const std::string_view home = home_section_of(key, section); !home.empty())
    return fmt::format("\"{}\" does not belong {}; it goes in [{}]", key, where, home);
  if (section.empty()) {  // not a section either: run() looks those up first
    std::string top;
    for (std::string_view k : allowed) {
      if (!contains(section_names(), k)) top += fmt::format("{}\"{}\"", top.empty() ? "" : ", ", k);
    }
    return fmt::format("unknown key \"{}\" at the top level; write {} or a section: {}", key, top,
                       quoted_list(section_names()));
  }
  return fmt::format("unknown key \"{}\" {}; the keys there are {}", key, where,
                     quoted_list(allowed));
}

class Applier {
 public:
  Applier(Reader& reader, Policy& policy) : r_(reader), p_(policy) {}

  void run(const toml::table& root) {
    for (auto&& [key, node] : root) {
      const std::string_view k = key.str();
      if (const Key* row = find_key("", k)) {
        apply(*row, "", k, node);
      } else if (!contains(section_names(), k)) {
        r_.error(key.source(), unknown_key(k, ""));
      } else if (const toml::table* table = node.as_table()) {
        section(k, *table);
      } else {
        r_.error(node, fmt::format("{} must be a table, not {}: write [{}] on its own line and "
                                   "its keys below it",
                                   k, type_name(node), k));
      }
    }
  }

 private:
  void section(std::string_view name, const toml::table& table) {
    for (auto&& [key, value] : table) {
      if (const Key* row = find_key(name, key.str())) {
        apply(*row, name, key.str(), value);
      } else {
        r_.error(key.source(), unknown_key(key.str(), name));
      }
    }
  }

  // `written` is the key as in the file: the row's name or its _add form.
  void apply(const Key& row, std::string_view section, std::string_view written,
             const toml::node& value) {
    if (row.apply == nullptr) return;  // not the applier's (extends: the loader's)
    auto path = [&](std::string_view key) {
      return section.empty() ? std::string(key) : fmt::format("{}.{}", section, key);
    };
    row.apply(r_, p_, Setting{value, path(written), path(row.name), written != row.name});
  }

  Reader& r_;
  Policy& p_;
};

}  // namespace

std::string SourcePos::to_string() const {
  return fmt::format("{}:{}:{}", file, line, column);
}

Error policy_error(const SourcePos& pos, std::string why) {
  return Error{"invalid policy", pos.to_string(), std::move(why), 0};
}

void apply_file(const toml::table& root, const std::string& file, const Expansion& x,
                Policy& policy, Positions& positions, std::vector<Error>& errors) {
  Reader::Found found;
  Reader reader(file, x, positions, found);
  Applier(reader, policy).run(root);
  // toml++ hands keys over sorted by name; the user reads the file top down.
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first.line, a.first.column) < std::pair(b.first.line, b.first.column);
  });
  for (auto& [pos, why] : found) errors.push_back(policy_error(pos, std::move(why)));
}

}  // namespace brig::policy
