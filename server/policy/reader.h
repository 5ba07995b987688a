// Typed reads of the values in one policy file. Each reader reports its own
// mistake (where, and what to write instead) and returns nullopt, so that one
// load reports every error in a file rather than stopping at the first.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "server/policy/apply.h"
#include "server/policy/expand.h"
#include "server/policy/names.h"
#include "server/policy/suggest.h"
#include "server/static_libs/toml.h"

namespace brig::policy {

// One `key = value` of a policy file, as a key's apply function gets it.
struct Setting {
  const toml::node& value;
  std::string name;  // "limits.memory": the key as written (with any _add), as errors name it
  std::string base;  // the key without _add: where Positions notes it
  bool add = false;  // written as X_add: append to the inherited list instead of replacing it
};

// "a string", "an integer": what was found instead of the expected type.
std::string_view type_name(const toml::node& n);

class Reader {
 public:
  using Found = std::vector<std::pair<SourcePos, std::string>>;
  Reader(const std::string& file, const Expansion& x, Positions& positions, Found& errors)
      : file_(file), x_(x), positions_(positions), errors_(errors) {}

  void error(const toml::node& at, std::string why) { error(at.source(), std::move(why)); }
  void error(const toml::source_region& at, std::string why);
  // Records where `key` was set, for errors found after merging.
  void note(const std::string& key, const toml::node& at);
  const Expansion& expansion() const { return x_; }

  std::optional<std::string> string(const toml::node& n, std::string_view key,
                                    std::string_view example);
  std::optional<bool> boolean(const toml::node& n, std::string_view key);
  // `alternative` (" or \"unlimited\"") is what else the key takes.
  std::optional<uint64_t> integer(const toml::node& n, std::string_view key, int64_t min,
                                  int64_t max, std::string_view alternative);
  // An absolute, normalized path after ~ and $VAR expansion.
  std::optional<std::string> path(const toml::node& n, std::string_view key);
  const toml::array* list(const toml::node& n, std::string_view key, std::string_view example);

  // A size, or "unlimited" when `allow_unlimited`; the outer optional is
  // empty on error, the inner one for "unlimited".
  std::optional<std::optional<uint64_t>> size(const toml::node& n, const std::string& key,
                                              bool allow_unlimited);
  // A duration longer than 0, or "unlimited".
  std::optional<std::optional<std::chrono::milliseconds>> duration(const toml::node& n,
                                                                   const std::string& key);
  // A whole number from `min`, or "unlimited".
  std::optional<std::optional<uint64_t>> count(const toml::node& n, const std::string& key,
                                               int64_t min);

  template <class E, size_t N>
  std::optional<E> enumerated(const toml::node& n, std::string_view key,
                              const std::array<std::string_view, N>& table);

  // The typed reads above stored into `field`, noting where it was set.
  void set(bool& field, const Setting& s);
  template <class E, size_t N>
  void set(E& field, const Setting& s, const std::array<std::string_view, N>& table);

 private:
  const std::string& file_;
  const Expansion& x_;
  Positions& positions_;
  Found& errors_;
};

template <class E, size_t N>
std::optional<E> Reader::enumerated(const toml::node& n, std::string_view key,
                                    const std::array<std::string_view, N>& table) {
  const auto* s = n.as_string();
  if (s == nullptr) {
    error(n, fmt::format("{} must be one of {} (a quoted string); found {}", key,
                         quoted_list(table), type_name(n)));
    return std::nullopt;
  }
  if (auto e = names::find<E>(s->get(), table)) return e;
  // "host" for "dangerously_host": the risky name is not a typo of the short one.
  std::optional<std::string_view> guess = closest(s->get(), table);
  for (std::string_view candidate : table) {
    if (!guess && !s->get().empty() && candidate.ends_with("_" + s->get())) guess = candidate;
  }
  error(n,
        fmt::format("{} = \"{}\" is not allowed; {}write one of {}", key, s->get(),
                    guess ? fmt::format("did you mean \"{}\"? ", *guess) : "", quoted_list(table)));
  return std::nullopt;
}

template <class E, size_t N>
void Reader::set(E& field, const Setting& s, const std::array<std::string_view, N>& table) {
  if (auto e = enumerated<E>(s.value, s.name, table)) {
    field = *e;
    note(s.name, s.value);
  }
}

}  // namespace brig::policy
