// `~` and `$VAR` expansion in policy strings, and path normalization. Pure:
// the caller passes the home directory and the environment.
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace brig::policy {

// Environment variables by name.
using EnvMap = std::map<std::string, std::string, std::less<>>;

// What expansion substitutes: `~` is home, `$NAME` and `${NAME}` come from env.
struct Expansion {
  std::string_view home;
  const EnvMap& env;
};

// Expands a leading "~" (alone or before '/'), every $NAME and ${NAME}, and
// "$$" to "$". An unset variable, "~user" or a stray '$' is an error that
// says what to write instead.
std::expected<std::string, std::string> expand(std::string_view text, const Expansion& x);

// As expand(), and also "~" after each ':' (as a shell does in assignments,
// for PATH-like values).
std::expected<std::string, std::string> expand_value(std::string_view text, const Expansion& x);

// An expanded path made absolute and normal (jail/base/path.h,
// DotDot::refuse), or why not in words for the policy's author: relative
// paths and ".." are errors (a lexical ".." is wrong across symlinks).
std::expected<std::string, std::string> normalize_path(std::string_view path);

}  // namespace brig::policy
