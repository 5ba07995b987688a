// Secret: one real API key, held only by the process that serves the LLM
// proxy (brig-server, or `brig run`). Its bytes sit in a page of their own,
// excluded from core dumps (MADV_DONTDUMP), zeroed in any process cloned
// from this one (MADV_WIPEONFORK: `brig run`'s jail), locked out of swap
// where the limit allows (mlock, best effort), and wiped before the page
// goes. It never formats: nothing prints a Secret by accident.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/error.h"
#include "server/policy/expand.h"
#include "server/policy/policy.h"

namespace brig::llm {

class Secret {
 public:
  Secret() = default;
  // Copies `bytes` into a fresh page; fails only when no page can be mapped.
  static Result<Secret> hold(std::string_view bytes);
  Secret(Secret&& o) noexcept;
  Secret& operator=(Secret&& o) noexcept;
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;
  ~Secret();

  // The key's bytes; valid while this Secret lives. Never log them.
  std::string_view reveal() const { return {data_, size_}; }
  bool empty() const { return size_ == 0; }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;
};

// Wipes `s`'s bytes (the compiler may not drop it), then clears it: for the
// temporary strings a key passed through (a request head being written).
void wipe(std::string& s);

// The real key of `route`: its key_env from `env` (brig's own environment),
// or its key_file, which must be a regular file owned by this process's
// effective user with no group or other permission bits (opened without
// following a symlink at its last component). Trailing whitespace (the
// newline an editor adds) is dropped; an empty key, or one with a control
// character inside (it would split the header it goes in), is refused. The
// error names the route and the variable or file, never a byte of the key.
Result<Secret> load_key(const policy::LlmRoute& route, const policy::EnvMap& env);

// Wipes the value of every route's key_env in this process's environment
// in place (so /proc/self/environ no longer shows it, nor the memory a
// process cloned from this one starts with), then unsets it. For after
// load_key.
void forget_key_variables(const std::vector<policy::LlmRoute>& routes);
// The same for a copy of the environment: each key_env entry of `env`
// wiped and erased.
void forget_key_variables(const std::vector<policy::LlmRoute>& routes, policy::EnvMap& env);

// For `brig doctor` and `brig policy show`: "present (ANTHROPIC_API_KEY)",
// or why the route would be refused. Reads the key and forgets it.
std::string key_status(const policy::LlmRoute& route, const policy::EnvMap& env);

}  // namespace brig::llm
