// The policy loader: TOML (a shipped policy's name or a file) -> Policy,
// following `extends`, expanding `~` and `$VAR`, and refusing anything it
// does not know. Every error names file:line:col and says what to write
// instead. The merge rules are in policies/README.md.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/error.h"
#include "server/policy/expand.h"
#include "server/policy/policy.h"

namespace brig::policy {

// One policy file's text and where it came from.
struct PolicySource {
  std::string display;   // in messages: the path as given, or "<built-in>/default.toml"
  std::string text;      // TOML
  std::string dir;       // where a relative `extends` path starts; empty = the current directory
  std::string identity;  // "builtin:default" or the file's real path, to detect cycles
  bool builtin = false;  // a built-in may only extend other built-ins
};

// Whether `ref` names a file (it contains '/' or ends in ".toml") rather than
// a shipped policy ("default", "strict", "dev").
bool names_a_file(std::string_view ref);

// The source `ref` names: a shipped policy, or a file (relative to `dir`,
// empty = the current directory), which is read. Fails for an unknown name
// (with the shipped names) or an unreadable file.
Result<PolicySource> open_policy(std::string_view ref, std::string_view dir = {});

// A resolved policy and the files it came from.
struct LoadedPolicy {
  Policy policy;
  std::vector<std::string> chain;  // display names, the loaded file first, then what it extends
  // Every file of the chain (built-ins have none), each as an absolute path
  // as named and as its real path: what refuse_writable_policy_files checks.
  std::vector<std::string> files;
};

// Every error found, in file order; never empty on failure.
using LoadResult = std::expected<LoadedPolicy, std::vector<Error>>;

// Loads `source` and what it extends, with `x` for `~` and `$VAR`.
LoadResult load_policy(const PolicySource& source, const Expansion& x);

// open_policy(ref) + load_policy().
LoadResult load_policy(std::string_view ref, const Expansion& x);

}  // namespace brig::policy
