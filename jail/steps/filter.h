// The launcher's side of network mode `filtered`: brig-netfilter
// (jail/netfilter/) run on the jail's network namespace, which the network
// helper sent (net.h), while the child builds its mounts. Its command waits
// for the cgroups, which go only once the rules are loaded (launcher.cc),
// so no command runs before its rules.
#pragma once

#include <sys/types.h>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "jail/spec.h"

namespace brig::jail::filter {

// brig-netfilter at work; killed and reaped if it goes unfinished.
class Running {
 public:
  Running(pid_t pid, UniqueFd pidfd, UniqueFd errors)
      : pid_(pid), pidfd_(std::move(pidfd)), errors_(std::move(errors)) {}
  Running(Running&&) noexcept = default;
  Running& operator=(Running&&) = delete;
  ~Running();
  // Waits for it: fails with SetupStep::netfilter and its line of stderr.
  Result<void> finish();

 private:
  pid_t pid_;
  UniqueFd pidfd_;
  UniqueFd errors_;  // its stderr
};

// Starts filter.program with the jail's rules (netfilter/ruleset.h) on its
// stdin and `netns` as its fd 3.
Result<Running> start(const NetFilter& filter, int netns);

}  // namespace brig::jail::filter
