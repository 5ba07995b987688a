// The launcher: JailSpec + ExecRequest -> a running jailed command -> its
// Outcome. Call it only from a small single-threaded process (`brig run`, the
// server's spawner): the jail is cloned from the caller, and a clone of a
// big or multi-threaded process is slow and unsafe (DESIGN.md).
#pragma once

#include <sys/types.h>

#include <chrono>
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

namespace brig::jail {

struct ChildPlan;

struct SpawnOptions {
  // Stamp each setup step (Outcome::steps): a page shared with the child,
  // for benchmarks; off, the steps cost nothing more.
  bool time_steps = false;
};

// Which file a bind's host source is: its device and inode (zeros for a
// missing optional one), and for a tree that keeps its owner, that owner
// (its idmapping).
struct BindSourceId {
  dev_t dev = 0;
  ino_t ino = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  friend bool operator==(const BindSourceId&, const BindSourceId&) = default;
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

  // Built ahead by spawn_awaiting and not yet given its command.
  bool awaiting() const { return static_cast<bool>(command_fd_); }

  // Sends `sig` to the init, which forwards HUP INT QUIT TERM USR1 USR2
  // WINCH CONT to the command; SIGKILL ends the whole jail. Returns errno or 0.
  int signal(int sig) const;

 private:
  friend Result<RunningJail> spawn_jail(const JailSpec&, const ExecRequest&, SpawnOptions, bool);
  friend Result<void> start_command(RunningJail&, const ExecRequest&,
                                    std::optional<std::chrono::milliseconds>);
  friend bool built_from_current_host(const RunningJail&, const JailSpec&);
  friend Result<Outcome> wait(RunningJail&, std::optional<Clock::time_point>);
  friend Result<Outcome> wait_forwarding(RunningJail&, std::optional<Clock::time_point>, int);
  friend Result<Outcome> wait_until_status(RunningJail&, std::optional<Clock::time_point>);
  friend Outcome run(const JailSpec&, const ExecRequest&);
  RunningJail();
  void kill_and_reap();
  // wait_forwarding; with `until_status`, returns as soon as the init has
  // reported the command's status, without waiting for (or reaping) the
  // init's own exit.
  static Result<Outcome> wait_for(RunningJail& j, std::optional<Clock::time_point> deadline,
                                  int signal_fd, bool until_status);

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd status_fd_;   // read end: setup failures and the command's status
  UniqueFd watch_fd_;    // write end: its closing tells the init the launcher is gone
  UniqueFd command_fd_;  // awaiting: the sync socket the command goes over
  // Awaiting: each bind's host source when it was built, for
  // built_from_current_host.
  std::vector<BindSourceId> bind_sources_;
  cgroups::Group cgroup_;
  LayerReport layers_;
  Clock::time_point started_;
  std::optional<Clock::time_point> deadline_;
  std::unique_ptr<ChildPlan> plan_;  // kept to name the failed step's input
  bool pid_namespace_ = true;        // false: the no-namespace tier, see kill_and_reap
  StepClock steps_;                  // active with SpawnOptions::time_steps
  bool reaped_ = false;
};

// Starts `request` in a new jail built from `spec` and returns at once (the
// child builds the jail while the caller goes on). Fails, with Error.where
// naming the step ("validate", "require", "clone3", "uid_map", …), when the
// spec is invalid, a required layer cannot be enforced, or the jail cannot
// be created; failures inside the jail come out of wait() as setup_failed.
Result<RunningJail> spawn(const JailSpec& spec, const ExecRequest& request, SpawnOptions options = {});

// A jail built ahead of its command (a pool's): spawn() without a command,
// up to the last step before it (contain.cc 6b), where it waits, its stdio
// /dev/null, no wall-time deadline yet. start_command gives it one command,
// once; everything that confines the command (ids, cgroups, rlimits, caps,
// no_new_privs, Landlock, seccomp) is applied after it came, as in a fresh
// jail. Dropping it unused kills it like any RunningJail.
Result<RunningJail> spawn_awaiting(const JailSpec& spec, SpawnOptions options = {});

// Sends an awaiting jail its command (stdio fds -1: /dev/null); the
// jail's time (Outcome::duration, `wall_time`'s deadline) starts now. Fails
// without sending anything, the jail still awaiting, for an invalid request
// or one over command::kMaxBytes; fails with the jail no longer usable when
// it is gone (it failed, or was killed) or was already given a command.
Result<void> start_command(RunningJail& jailed, const ExecRequest& request,
                           std::optional<std::chrono::milliseconds> wall_time);

// Whether a jail built ahead still shows the host as it is now: `spec`
// plans the same mounts as when it was built (symlinks resolve alike), and
// each bind's host source is still the same file (device and inode). A
// workspace deleted and made again, or a directory swapped for another,
// would otherwise be seen as it was. A pool drops a jail for which this is
// false (~50 us: the mount plan's lstat/readlink and one stat per bind).
bool built_from_current_host(const RunningJail& jailed, const JailSpec& spec);

// Waits until the jail's init exits, or until the earlier of `deadline` and
// the jailed deadline(), then kills the whole jail (timed_out). Removes the
// jail's cgroups. Once pidfd() polls readable it returns without blocking
// (for an event loop). Fails only if the jail was already waited for or
// waitid fails.
Result<Outcome> wait(RunningJail& jailed,
                     std::optional<RunningJail::Clock::time_point> deadline = std::nullopt);

// wait(), but returns as soon as the init has reported the command's status
// (every other process of the jail killed and reaped, its cgroups removed),
// as bwrap does: the init's own exit, with the teardown of the jail's
// namespaces, need not delay the caller. The init is then left unreaped
// (the Outcome has no rusage): the caller reaps it with waitid on pidfd()
// once that is readable, or exits. For a loop that polls status_fd().
Result<Outcome> wait_until_status(RunningJail& jailed,
                                  std::optional<RunningJail::Clock::time_point> deadline = std::nullopt);

// wait(), but also forwards the signals readable on `signal_fd` (a signalfd
// the caller made for SIGINT, SIGTERM, …) to the jail.
Result<Outcome> wait_forwarding(RunningJail& jailed, std::optional<RunningJail::Clock::time_point> deadline,
                                int signal_fd);

// spawn + wait for `brig run`, forwarding SIGHUP, SIGINT, SIGQUIT, SIGTERM,
// SIGUSR1, SIGUSR2 and SIGWINCH to the jail while it runs (they are blocked
// in the caller meanwhile, and the mask restored after). A spawn failure
// becomes a setup_failed Outcome. Returns as soon as the init reports the
// command's status (every other process of the jail killed and reaped, its
// cgroups removed), as bwrap does: the init's own exit, which tears the
// namespaces down, is left to it, and its zombie to the caller's exit, so
// the Outcome has no rusage. For a caller about to exit.
Outcome run(const JailSpec& spec, const ExecRequest& request);

}  // namespace brig::jail
