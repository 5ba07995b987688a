// Helpers for loading policy text in tests.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

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

// Loads policy text as ~ada's (/home/ada), with no environment variables.
class PolicyText : public ::testing::Test {
 protected:
  LoadResult load(std::string text) { return load_policy(source(std::move(text)), x); }
  EnvMap env;
  Expansion x{"/home/ada", env};
};

}  // namespace brig::policy::testing
