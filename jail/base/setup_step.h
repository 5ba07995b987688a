// SetupStep: the one name for a step of a jail's setup, on either side of
// clone3. The launcher's errors (Error::step), the child's status records,
// SetupFailure and the messages all use it, so a failure is named the same
// wherever it surfaces. Header-only: the child of a raw clone uses it too.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace brig::jail {

// In the order the steps run (docs/jail.md, "Sequence"); a step that runs on
// both sides (planned by the launcher, applied in the child) is listed once.
enum class SetupStep : std::uint32_t {
  none,          // not a jail setup step
  validate,      // the spec or the request is invalid
  require,       // a layer the spec requires cannot be enforced
  mount,         // the mount plan or the idmapped trees; in the child, index = the plan's op
  caps,          // planning, then dropping capabilities
  landlock,      // planning, then Landlock restrict_self
  seccomp,       // the filter, then loading it
  fds,           // stdio fds checked; in the child, moved into place and the rest closed
  sync,          // the launcher's pipes and sockets, the go byte
  clone3,        // clone3 with the jail's namespaces
  netns,         // the network namespace's helper, and the child joining its namespace
  uid_map,       // the uid/gid maps the launcher writes
  cgroup,        // made and sent by the launcher; joined by the command, index = hierarchy
  identity,      // the child's ids, dumpable, pdeathsig, setsid
  signals,       // the init's signal handling
  loopback,      // lo up in the new network namespace
  listen,        // the spec's listeners on the jail's 127.0.0.1, made by the network helper
  netfilter,     // a filtered jail's nftables tables and veth (steps/filter.h)
  hostname,      // sethostname in the new uts namespace
  command,       // a jail built ahead receiving its command
  fork,          // the init starting the command
  rlimit,        // index = the rlimit entry
  chdir,         // the command's working directory
  no_new_privs,  // PR_SET_NO_NEW_PRIVS
  exec,          // execve of every PATH candidate failed
  init,          // the jail's init (PID 1) ended before starting the command
  wait,          // waiting for the jail failed
};
inline constexpr std::uint32_t kSetupSteps = static_cast<std::uint32_t>(SetupStep::wait) + 1;

// A stable lower-case name for messages and the spawner's wire ("mount",
// "no_new_privs"); "" for none.
constexpr const char* step_name(SetupStep step) {
  switch (step) {
    case SetupStep::none:
      return "";
    case SetupStep::validate:
      return "validate";
    case SetupStep::require:
      return "require";
    case SetupStep::mount:
      return "mount";
    case SetupStep::caps:
      return "caps";
    case SetupStep::landlock:
      return "landlock";
    case SetupStep::seccomp:
      return "seccomp";
    case SetupStep::fds:
      return "fds";
    case SetupStep::sync:
      return "sync";
    case SetupStep::clone3:
      return "clone3";
    case SetupStep::netns:
      return "netns";
    case SetupStep::uid_map:
      return "uid_map";
    case SetupStep::cgroup:
      return "cgroup";
    case SetupStep::identity:
      return "identity";
    case SetupStep::signals:
      return "signals";
    case SetupStep::loopback:
      return "loopback";
    case SetupStep::listen:
      return "listen";
    case SetupStep::netfilter:
      return "netfilter";
    case SetupStep::hostname:
      return "hostname";
    case SetupStep::command:
      return "command";
    case SetupStep::fork:
      return "fork";
    case SetupStep::rlimit:
      return "rlimit";
    case SetupStep::chdir:
      return "chdir";
    case SetupStep::no_new_privs:
      return "no_new_privs";
    case SetupStep::exec:
      return "exec";
    case SetupStep::init:
      return "init";
    case SetupStep::wait:
      return "wait";
  }
  return "unknown";
}

// The step step_name() names; nullopt for a name it never gives.
constexpr std::optional<SetupStep> step_from_name(std::string_view name) {
  for (std::uint32_t i = 0; i < kSetupSteps; ++i)
    if (name == step_name(static_cast<SetupStep>(i))) return static_cast<SetupStep>(i);
  return std::nullopt;
}

}  // namespace brig::jail
