// The shipped policies (policies/*.toml), compiled into brig so that
// `brig run` and `brig serve` need no installed files.
#pragma once

#include <span>
#include <string_view>

namespace brig::policy {

struct BuiltinPolicy {
  std::string_view name;  // "default", "strict", "dev"
  std::string_view text;  // the TOML file, comments blanked (lines and columns kept)
};

// Every shipped policy, "default" first. Generated at build time
// (embed_policies.cc), with the comments blanked out.
std::span<const BuiltinPolicy> builtin_policies();

// The shipped policy called `name`; nullptr if there is none.
const BuiltinPolicy* find_builtin(std::string_view name);

}  // namespace brig::policy
