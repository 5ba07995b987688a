// The command's execve, planned before clone: argv and envp as ready arrays,
// and argv[0]'s PATH candidates (PATH from the jail's env, not brig's), so the
// child searches without allocating.
#pragma once

#include <string>
#include <vector>

#include "jail/spec.h"

namespace brig::jail::exec {

// Not copyable: argv/envp point into the owned strings.
struct Prepared {
  std::vector<std::string> candidates;      // paths to try in order
  std::vector<const char*> candidate_ptrs;  // null-terminated, into candidates
  std::vector<std::string> strings;         // storage for argv then env
  std::vector<char*> argv;                  // null-terminated
  std::vector<char*> envp;                  // null-terminated
  Prepared() = default;
  Prepared(Prepared&&) = default;
  Prepared& operator=(Prepared&&) = default;
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;
};

// The paths execvpe would try for `file` given `env`'s PATH (default
// /usr/local/bin:/usr/bin:/bin); a name with '/' is tried as it is. Pure.
std::vector<std::string> path_candidates(const std::string& file,
                                         const std::vector<std::string>& env);

Prepared prepare(const ExecRequest& request);

// Tries each candidate like execvpe: a missing one (ENOENT, ENOTDIR) or one
// not permitted (EACCES) moves on; any other error stops. Returns only on
// failure: EACCES if some candidate was there but denied, else the last
// errno. Async-signal-safe.
int exec_in_child(const Prepared& prepared);
// The same over null-terminated arrays (a pooled jail's received command).
int exec_in_child(const char* const* candidates, char* const* argv, char* const* envp);

}  // namespace brig::jail::exec
