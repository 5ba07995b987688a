// Errors of the launcher's setup steps: the step goes in Error::step, so
// Error::where stays the input that failed (a path, a field).
#pragma once

#include <cstring>
#include <string>
#include <utility>

#include "jail/base/error.h"
#include "jail/base/setup_step.h"

namespace brig::jail {

inline Error step_error(SetupStep step, std::string what, std::string why, int err = 0) {
  return Error{std::move(what), "", std::move(why), err, step};
}

inline Error step_sys_error(SetupStep step, std::string what, int err) {
  return Error{std::move(what), "", ::strerror(err), err, step};
}

// Names the step of an Error from a lower layer (a planner, a validator).
inline Error at_step(SetupStep step, Error e) {
  e.step = step;
  return e;
}

}  // namespace brig::jail
