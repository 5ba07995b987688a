// bubblewrap as the jail benchmarks' peer, with the isolation brig gives:
// the default policy's jail as `brig run` (and the exec tool) plan it,
// translated one for one into bwrap arguments, and brig's own compiled
// seccomp programs for bwrap's --add-seccomp-fd. Shared by brig-jail-bench
// and brig-tools-bench so that both compare against the same bwrap command.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "jail/launcher.h"

namespace brig::bench {

// The default policy's jail for this caller in `workspace`, as `brig run` plans it.
struct Planned {
  jail::JailSpec spec;
  jail::ExecRequest request;
};
Planned plan_default(const std::string& workspace, std::vector<std::string> argv);

// bwrap arguments for the same jail: every namespace brig makes, the mount
// plan of `p` one for one, brig's environment, hostname and seccomp
// programs (read from fds 3 and 4: seccomp_fds() passed by a Command). What
// bwrap cannot do (Landlock, limits) is for the caller to say.
std::vector<std::string> bwrap_args(const std::string& bwrap, const Planned& p,
                                    std::vector<std::string> command);

// brig's two compiled seccomp programs in memfds at fds >= 10, for bwrap.
std::vector<int> seccomp_fds();

// A command to start with posix_spawn: argv, a working directory, and fds
// to hand on as 3, 4, … (each rewound before every start, since bwrap reads
// a seccomp fd to its end).
struct Command {
  std::vector<std::string> argv;
  std::string cwd;
  std::vector<int> pass_fds;
  bool quiet = true;  // stdout and stderr to /dev/null
};

// Starts c; exits the program with a message if it cannot.
pid_t start(const Command& c);
// Waits for pid: its exit code, or 128 + the signal that ended it.
int finish(pid_t pid);

}  // namespace brig::bench
