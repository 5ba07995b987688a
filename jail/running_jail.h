// RunningJail: the one handle to a started jail (its init's pid and pidfd,
// the pipes to it, its cgroups, what it enforces). jail::spawn makes one,
// jail::wait ends it (launcher.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "jail/layer_report.h"
#include "jail/outcome.h"
#include "jail/spec.h"
#include "jail/step_times.h"
#include "jail/steps/cgroups.h"
#include "jail/steps/net.h"

namespace brig::jail {

struct ChildPlan;
struct BuiltFrom;
struct VerifiedPlan;
namespace mounts {
struct Plan;
}

struct SpawnOptions {
  // Stamp each setup step (Outcome::steps): a page shared with the child,
  // for benchmarks; off, the steps cost nothing more.
  bool time_steps = false;
  // Where the launcher would block until its network helper is done, it
  // calls this with the helper's pidfd instead, to return once that polls
  // readable, so a caller with a loop of its own (brig-spawner, building a
  // jail ahead while another jail's command runs) can serve it meanwhile.
  // Empty: the launcher blocks. It may not start another jail.
  std::function<void(int pidfd)> wait_readable;
  // A jail built ahead for the spec this was planned from takes its mount
  // plan instead of planning again (JailPool: the last plan found unchanged).
  std::shared_ptr<const VerifiedPlan> verified;
};

// Which file a bind's host source is, or the host file or directory a mask,
// brig's file or the git layer sits on: its device, inode and birth time
// (zeros for a missing optional one), and for a tree that keeps its owner,
// that owner (its idmapping).
struct BindSourceId {
  dev_t dev = 0;
  ino_t ino = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::pair<std::int64_t, std::uint32_t> born{};  // birth time, where the file system has one
  friend bool operator==(const BindSourceId&, const BindSourceId&) = default;
};

// A jail built ahead's mount plan, with what it was planned from, once
// built_from_current_host found the host unchanged. The plan is a function
// of the spec and of the host's answers to the planner: another jail built
// ahead for the same spec may take it instead of planning again (~0.15 ms),
// and is checked before use as any other.
struct VerifiedPlan {
  std::shared_ptr<const BuiltFrom> from;
  std::shared_ptr<const mounts::Plan> mounts;
  std::vector<BindSourceId> bind_sources;
};

// A started jail. Move-only. Dropping a RunningJail that was not waited for
// kills the whole jail (SIGKILL to its init) and reaps it.
class RunningJail {
 public:
  using Clock = std::chrono::steady_clock;
  RunningJail(RunningJail&&) noexcept;
  RunningJail& operator=(RunningJail&&) noexcept;
  ~RunningJail();

  pid_t pid() const { return pid_; }          // the init's pid in the caller's pid namespace
  int pidfd() const { return pidfd_.get(); }  // readable when the init has exited; for signals
  // Readable when the init reports: a setup failure, or the command's status
  // as the init exits (see wait_until_status).
  int status_fd() const { return status_fd_.get(); }
  const LayerReport& layers() const { return layers_; }  // what is enforced
  Clock::time_point started() const { return started_; }
  // started() + the spec's wall_time; nullopt = no wall-time limit.
  std::optional<Clock::time_point> deadline() const { return deadline_; }

  // The spec's listeners, made in the jail's network namespace, in its
  // order (non-blocking, close-on-exec); empty after the first call. Whoever
  // takes them serves the jail's connections to them from outside.
  std::vector<UniqueFd> take_listeners() { return std::exchange(listeners_, {}); }

  // A jail built ahead with a network namespace of its own: a socket in that
  // namespace and its mount namespace's nsfs file (from its child, taken as
  // the command was sent), which keep both in being for as long as they are
  // open, after the jail's end too. Empty for other jails, after the first
  // call, or when the child had not sent them yet. brig-spawner holds these
  // until it is idle, to move the namespaces' teardown out of a burst of
  // calls (docs/server.md).
  net::NamespaceHold take_namespace_hold() { return std::move(namespace_hold_); }

  // Built ahead by spawn_awaiting and not yet given its command.
  bool awaiting() const { return static_cast<bool>(command_fd_); }

  // Sends `sig` to the init, which forwards HUP INT QUIT TERM USR1 USR2
  // WINCH CONT to the command; SIGKILL ends the whole jail. Returns errno or 0.
  int signal(int sig) const;

 private:
  friend class Launch;  // launcher.cc: builds it
  friend class Waiter;  // wait.cc: ends it
  friend Result<void> start_command(RunningJail&, const ExecRequest&,
                                    std::optional<std::chrono::milliseconds>);
  friend bool built_from_current_host(const RunningJail&, const JailSpec&);
  friend std::shared_ptr<const VerifiedPlan> verified_plan(const RunningJail&);
  RunningJail();
  void kill_and_reap();

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd status_fd_;   // read end: setup failures and the command's status
  UniqueFd watch_fd_;    // write end: its closing tells the init the launcher is gone
  UniqueFd command_fd_;  // awaiting: the sync socket the command goes over
  // Awaiting: each bind's host source when it was built, and what its plan
  // was made from, for built_from_current_host.
  std::vector<BindSourceId> bind_sources_;
  std::shared_ptr<const BuiltFrom> built_from_;
  cgroups::Group cgroup_;
  std::vector<UniqueFd> listeners_;
  net::NamespaceHold namespace_hold_;
  LayerReport layers_;
  Clock::time_point started_;
  std::optional<Clock::time_point> deadline_;
  std::unique_ptr<ChildPlan> plan_;  // kept to name the failed step's input
  bool pid_namespace_ = true;        // false: the no-namespace tier, see kill_and_reap
  StepClock steps_;                  // active with SpawnOptions::time_steps
  bool reaped_ = false;
};

}  // namespace brig::jail
