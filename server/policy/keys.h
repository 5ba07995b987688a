// The policy keys: one row each in keys.cc, the only place a key is named.
// The loader applies a file through the rows (and suggests keys from them),
// `brig policy show` writes a Policy out through them, and the key reference
// in policies/README.md is rendered from them (key_reference.h; a test fails
// when the README differs).
//
// To add a key: add its field, with its default, to Policy (policy.h); add
// one row to kKeys in keys.cc, where `brig policy show` and the README should
// list it; then paste its reference row into policies/README.md (the failing
// test prints the section as it should read).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "server/policy/policy.h"
#include "server/policy/reader.h"

namespace brig::policy {

enum class Form {
  value,  // one value: a later file's overrides it
  list,   // a list: `name` replaces the inherited one, `name_add` appends to it
  table,  // a table merged by its keys; shown as [section.name] after the section's other keys
};

struct Key {
  std::string_view section;  // "" for the top level
  std::string_view name;
  Form form = Form::value;
  std::string_view type;  // as the README's reference shows it
  std::string_view doc;   // the README's meaning column; for a list, also what empty means
  // Reads the value into the Policy, reporting every mistake through the
  // Reader; nullptr for a key read elsewhere (extends: the loader).
  void (*apply)(Reader& r, Policy& p, const Setting& s) = nullptr;
  // The value as TOML (for Form::table, its `key = value` lines); nullptr
  // for a key `brig policy show` leaves out. Also the README's built-in
  // column, shown for Policy{}.
  std::string (*show)(const Policy& p) = nullptr;
};

// Every row, in the order `brig policy show` and the README list them, the
// top level's first.
std::span<const Key> policy_keys();

// The row `name` stands for in `section` ("" for the top level), `name` being
// the key or, for a list, its _add form; nullptr if there is none.
const Key* find_key(std::string_view section, std::string_view name);

// The sections ([filesystem], ...), in table order.
std::span<const std::string_view> section_names();

// Every name `section` may hold, _add forms included, in table order; the
// top level ("") also holds the sections.
std::span<const std::string_view> key_names(std::string_view section);

}  // namespace brig::policy
