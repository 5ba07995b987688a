// The launcher: JailSpec + ExecRequest -> a running jailed command -> its
// Outcome. Call it only from a small single-threaded process (`brig run`, the
// server's spawner): the jail is cloned from the caller, and a clone of a
// big or multi-threaded process is slow and unsafe (DESIGN.md).
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "jail/base/error.h"
#include "jail/outcome.h"
#include "jail/running_jail.h"
#include "jail/spec.h"

namespace brig::jail {

// Starts `request` in a new jail built from `spec` and returns at once (the
// child builds the jail while the caller goes on). Fails, with Error.step
// naming the step (validate, require, clone3, uid_map, …), when the
// spec is invalid, a required layer cannot be enforced, or the jail cannot
// be created; failures inside the jail come out of wait() as setup_failed.
Result<RunningJail> spawn(const JailSpec& spec, const ExecRequest& request,
                          SpawnOptions options = {});

// A jail built ahead of its command (a pool's): spawn() without a command,
// its stdio /dev/null, no wall-time deadline yet. Its command's process is
// started and confined (ids, cgroups, caps, no_new_privs, Landlock,
// rlimits, seccomp: the steps of a fresh jail, in the same order) and waits
// for what to run (contain.cc, await_command). start_command gives it one
// command, once. Dropping it unused kills it like any RunningJail.
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
// each bind's host source, and the host file or directory each mask, brig's
// file and the git layer sits on, is still the same file (device, inode and
// birth time). A workspace deleted and made again, or a directory swapped
// for another, would otherwise be seen as it was; a hidden file replaced by
// rename or moved away, or .git moved away and made again, would be shown
// unmasked (the kernel lifts a mount on a replaced file in every
// namespace). A pool drops a jail for which this is false. For the spec it
// was built from (the wall time aside) the planner's questions to the host
// are asked again, stopping at the first answer that differs (~45
// lstat/readlink for the default policy), and one stat per bind; for
// another spec, the mounts are planned again.
bool built_from_current_host(const RunningJail& jailed, const JailSpec& spec);

// A jail built ahead's plan for SpawnOptions::verified, once
// built_from_current_host found it unchanged; null for a jail not built
// ahead.
std::shared_ptr<const VerifiedPlan> verified_plan(const RunningJail& jailed);

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
// `remove_cgroups` false: the jail's cgroups, empty by then, are removed
// when `jailed` is dropped instead (its destructor), so that a caller can
// report the Outcome before paying for their rmdir.
Result<Outcome> wait_until_status(
    RunningJail& jailed, std::optional<RunningJail::Clock::time_point> deadline = std::nullopt,
    bool remove_cgroups = true);

// spawn + wait for `brig run`, forwarding SIGHUP, SIGINT, SIGQUIT, SIGTERM,
// SIGUSR1, SIGUSR2 and SIGWINCH to the jail while it runs (they are blocked
// in the caller meanwhile, and the mask restored after). A spawn failure
// becomes a setup_failed Outcome. Returns as soon as the init reports the
// command's status (every other process of the jail killed and reaped, its
// cgroups removed), as bwrap does: the init's own exit, which tears the
// namespaces down, is left to it, and its zombie to the caller's exit, so
// the Outcome has no rusage. For a caller about to exit.
//
// `started`, when given, is called with the jail once it is spawned and
// before the wait: `brig run` takes the jail's listeners there and starts
// the egress relay, a thread, which may only exist once the clone is done.
// Its failure kills the jail and becomes the setup_failed Outcome.
using StartedHook = std::function<Result<void>(RunningJail&)>;
Outcome run(const JailSpec& spec, const ExecRequest& request, const StartedHook& started = {});

}  // namespace brig::jail
