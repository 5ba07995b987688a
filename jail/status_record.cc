#include "jail/status_record.h"

namespace brig::jail {

const char* step_name(Step step) {
  switch (step) {
    case Step::sync:
      return "sync";
    case Step::identity:
      return "identity";
    case Step::fds:
      return "fds";
    case Step::mount:
      return "mount";
    case Step::netns:
      return "netns";
    case Step::loopback:
      return "loopback";
    case Step::hostname:
      return "hostname";
    case Step::signals:
      return "signals";
    case Step::fork:
      return "fork";
    case Step::cgroup:
      return "cgroup";
    case Step::rlimit:
      return "rlimit";
    case Step::chdir:
      return "chdir";
    case Step::caps:
      return "caps";
    case Step::no_new_privs:
      return "no_new_privs";
    case Step::landlock:
      return "landlock";
    case Step::seccomp:
      return "seccomp";
    case Step::exec:
      return "exec";
    case Step::command:
      return "command";
  }
  return "unknown";
}

}  // namespace brig::jail
