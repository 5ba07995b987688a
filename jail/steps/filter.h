// The launcher's side of network mode `filtered`: brig-netfilter
// (jail/netfilter/), started before the jail's clone so that its loading
// (a dynamic program: libnftables) and its look at the host's table
// overlap the clone and the network helper; given the jail's network
// namespace once the helper has sent it (net.h), it makes the veth and
// loads the rules while the child builds its mounts. The command waits for
// its cgroups, which go only once the rules are in (launcher.cc), so no
// command runs before its rules.
#pragma once

#include <sys/types.h>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "jail/spec.h"

namespace brig::jail::filter {

// brig-netfilter at work; killed and reaped if it goes unfinished.
class Running {
 public:
  Running(UniqueFd pidfd, UniqueFd netns_sock, UniqueFd errors)
      : pidfd_(std::move(pidfd)), netns_sock_(std::move(netns_sock)), errors_(std::move(errors)) {}
  Running(Running&&) noexcept = default;
  Running& operator=(Running&&) = delete;
  ~Running();
  // Hands it the jail's network namespace, which it waits for.
  Result<void> give_netns(int netns);
  // Waits for it: fails with SetupStep::netfilter and its line of stderr.
  Result<void> finish();

 private:
  UniqueFd pidfd_;
  UniqueFd netns_sock_;  // the namespace goes here
  UniqueFd errors_;      // its stderr
};

// Starts filter.program with the jail's rules (netfilter/ruleset.h) on its
// stdin and, as its fd 3, a socket it receives the namespace on.
Result<Running> start(const NetFilter& filter);

}  // namespace brig::jail::filter
