// The launcher's side of network mode `filtered`, in two steps around the
// network helper (net.h), which loads the jail's own rules (a netlink batch:
// netfilter/jail_rules.h) in the namespace it makes:
//
//   ensure_host: before the namespace is needed. Forwarding must be on
//     (brig never turns it on), and the host's table `inet brig_filtered`
//     (netfilter/ruleset.h) must hold brig's rules. When it does not (the
//     first filtered jail since boot, a flushed ruleset, an older brig's
//     table), brig-netfilter loads it: a separate program because it links
//     libnftables, a shared library, and the launchers are static. Most
//     jails find the table in place and run no program at all.
//   give_veth: once the helper has sent the namespace and an rtnetlink
//     socket of it, the veth (netfilter/veth.h): host end brigf<N> with the
//     .1 of its /30, jail end eth0 with the .2 and the default route.
//
// Both run in the launcher, in its own namespace: it never joins the jail's.
// The command waits for its cgroups, which go only once both are done
// (launcher.cc), so no command runs before its rules and its veth.
#pragma once

#include "jail/base/error.h"
#include "jail/spec.h"

namespace brig::jail::filter {

// Fails with SetupStep::netfilter saying what is missing and how to fix it.
Result<void> ensure_host(const NetFilter& filter);

// `netns`: the jail's network namespace; `route_sock`: an rtnetlink socket
// opened in it. Fails with SetupStep::netfilter.
Result<void> give_veth(int netns, int route_sock);

}  // namespace brig::jail::filter
