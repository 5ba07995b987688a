// Helpers for loading policy text in tests.
#pragma once

#include <string>
#include <vector>

#include "server/policy/loader.h"

namespace brig::policy::testing {

// A policy file named "test.toml" with `text`, extending relative to `dir`.
inline PolicySource source(std::string text, std::string dir = "", std::string name = "test.toml") {
  return PolicySource{name, std::move(text), std::move(dir), "test:" + name, false};
}

// "where: why" for each error, to compare whole lists at once.
inline std::vector<std::string> messages(const LoadResult& r) {
  std::vector<std::string> out;
  if (r) return out;
  for (const Error& e : r.error()) out.push_back(e.where + ": " + e.why);
  return out;
}

}  // namespace brig::policy::testing
