#include "jail/outcome.h"

#include <errno.h>
#include <string.h>

#include <utility>

namespace brig::jail {

int Outcome::exit_status() const {
  switch (kind) {
    case Kind::exited:
      return exit_code;
    case Kind::signaled:
      return 128 + signal;
    case Kind::timed_out:
      return 124;
    case Kind::setup_failed:
      if (setup.step != SetupStep::exec) return 125;
      // As a shell does: a command that is not there is 127, one that is
      // there but cannot be run (permission, format, Landlock) is 126.
      return setup.sys_errno == ENOENT || setup.sys_errno == ENOTDIR ? 127 : 126;
  }
  return 125;
}

std::string Outcome::to_string() const {
  switch (kind) {
    case Kind::exited:
      return "exited " + std::to_string(exit_code);
    case Kind::signaled:
      return "signaled " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
    case Kind::timed_out:
      return "timed out";
    case Kind::setup_failed:
      return std::string("setup failed at step ") + step_name(setup.step) + ": " + setup.message;
  }
  return "unknown";
}

Outcome setup_failed_outcome(SetupStep step, int sys_errno, std::string message) {
  Outcome o;
  o.kind = Outcome::Kind::setup_failed;
  o.setup = SetupFailure{step, sys_errno, std::move(message)};
  return o;
}

}  // namespace brig::jail
