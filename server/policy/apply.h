// Applies one parsed policy file on top of a Policy: the merge step of
// `extends`. Internal to the loader; policies/README.md states the rules:
// scalars override, lists replace (`X_add` appends), `environment.set` merges
// by variable name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "jail/base/error.h"
#include "server/policy/expand.h"
#include "server/policy/policy.h"
#include "server/static_libs/toml.h"

namespace brig::policy {

// A place in a policy file.
struct SourcePos {
  std::string file;  // as shown to the user: a path, or "<built-in>/default.toml"
  uint32_t line = 0;
  uint32_t column = 0;
  std::string to_string() const;  // "file:line:col"
};

// Where each setting was last written, by key path ("seccomp.enabled") or,
// for list entries, key path and value ("filesystem.read_write /a").
using Positions = std::map<std::string, SourcePos>;

// A policy error at `pos`: Error{"invalid policy", "file:line:col", why}.
Error policy_error(const SourcePos& pos, std::string why);

// Applies `root` (the file `file`) onto `policy`, expanding with `x`. Every
// problem is appended to `errors`; what is valid is applied regardless, so one
// run reports every mistake. The `extends` key is left to the caller.
void apply_file(const toml::table& root, const std::string& file, const Expansion& x,
                Policy& policy, Positions& positions, std::vector<Error>& errors);

}  // namespace brig::policy
