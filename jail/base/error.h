// Error: what failed, on which input, and why. The one error value that
// crosses brig's layer boundaries inside std::expected.
#pragma once

#include <cstring>
#include <expected>
#include <string>
#include <utility>

#include "jail/base/setup_step.h"

namespace brig {

struct Error {
  std::string what;   // the operation that failed: "mount /proc", "parse policy"
  std::string where;  // the input it failed on: a path, "file:line:col"; may be empty
  std::string why;    // the cause: errno text, a policy rule, a remedy; may be empty
  int sys_errno = 0;  // errno when a system call failed, else 0
  // The jail's setup step that failed (the launcher's errors); none elsewhere.
  jail::SetupStep step = jail::SetupStep::none;

  // "what (where) (step): why" — the parts that are empty are left out.
  std::string to_string() const {
    std::string s = what;
    if (!where.empty()) s += " (" + where + ")";
    if (step != jail::SetupStep::none) s += std::string(" (") + jail::step_name(step) + ")";
    if (!why.empty()) s += ": " + why;
    return s;
  }
};

template <class T>
using Result = std::expected<T, Error>;

// An Error for a failed system call; why is strerror(err).
inline Error sys_error(std::string what, std::string where, int err) {
  return Error{std::move(what), std::move(where), std::strerror(err), err};
}

}  // namespace brig

// g++ 12 has std::expected but not and_then/transform: BRIG_TRY unwraps a
// Result<T> or returns its error from the enclosing function.
//   auto fd = BRIG_TRY(open_dir(path));
#define BRIG_TRY(...)                                                                   \
  __extension__({                                                                       \
    auto brig_try_result_ = (__VA_ARGS__);                                              \
    if (!brig_try_result_) return std::unexpected(std::move(brig_try_result_.error())); \
    std::move(*brig_try_result_);                                                       \
  })

// For Result<void>: returns the error, if any, from the enclosing function.
#define BRIG_TRY_VOID(...)                                                              \
  do {                                                                                  \
    auto brig_try_result_ = (__VA_ARGS__);                                              \
    if (!brig_try_result_) return std::unexpected(std::move(brig_try_result_.error())); \
  } while (0)
