// Spawner (server side): the handle on brig-spawner, the small
// single-threaded process that clones every jail the server needs (DESIGN.md:
// a fork of the big server would be slow and could carry its secrets).
// brig-server starts it once, before it reads any secret; it dies with the
// server. Requests travel over a SOCK_SEQPACKET socketpair, the jail's stdio
// fds and the init's pidfd ride along as SCM_RIGHTS (messages.h).
//
// Single-threaded use: a Spawner and its RunningJails belong to one io_context
// run by one thread, and go before it does (they hold its timers and
// descriptors).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "jail/outcome.h"
#include "jail/spec.h"

namespace brig::spawner {

namespace detail {
struct SpawnerCore;  // the socket, the process, the jails in flight
struct JailState;    // one jail: its pidfd, its outcome once known
}  // namespace detail

// One jail started through the spawner: the server's side of what brig-spawner
// holds as a jail::RunningJail, so the running jail has one name on both
// sides. Move-only. Dropping a RunningJail whose jail has not ended kills the
// whole jail (SIGKILL through the pidfd). An exec::Job follows one through
// exec::Process (server/exec/launch.h).
class RunningJail;

class Spawner : public std::enable_shared_from_this<Spawner> {
 public:
  // Starts `spawner_path` (brig-spawner) with an empty environment and
  // returns its handle. Fails when the program cannot be started. Call it
  // from the thread that lives as long as the server (the main thread):
  // PR_SET_PDEATHSIG fires when the thread that started the spawner ends.
  // `jail_pool`: the spawner keeps a jail built ahead for the next spawn
  // (server/spawner/jail_pool.h); false builds every jail for its spawn.
  static Result<std::shared_ptr<Spawner>> start(asio::any_io_executor executor,
                                                const std::string& spawner_path,
                                                bool jail_pool = true);
  // brig-spawner next to the running executable (bin/ of the build tree,
  // libexec/brig/ where brig-server is installed).
  static Result<std::string> find_program();
  // Closes the socket, upon which the spawner kills every jail it holds and
  // exits; waits (bounded) for it to exit. Pending spawns and waits fail.
  ~Spawner();

  // Starts `request` in a new jail built from `spec`. request.stdin_fd,
  // stdout_fd and stderr_fd are the caller's fds (-1: /dev/null) that become
  // the jail's stdio; they are duplicated into the spawner, so the caller may
  // close its copies once this returns. Fails when the spawner refused (an
  // invalid spec, a required layer missing, clone3 failing: Error.step names
  // the step) or is gone. Cancelling the co_await throws operation_aborted;
  // the jail, if the spawner started it meanwhile, is killed. By value: a
  // coroutine starts later than the call (co_spawn), when a temporary
  // argument would be gone.
  asio::awaitable<Result<RunningJail>> spawn(jail::JailSpec spec, jail::ExecRequest request);

  pid_t pid() const;   // the spawner process
  bool alive() const;  // false once its socket closed (spawn() starts it again)

 private:
  explicit Spawner(std::shared_ptr<detail::SpawnerCore> core);
  // A spawner that died (killed, crashed) is started again, at most once a
  // second; its jails died with it.
  Result<void> restart_if_gone();

  std::shared_ptr<detail::SpawnerCore> core_;
  asio::any_io_executor executor_;
  std::string path_;
  bool jail_pool_ = true;
  std::chrono::steady_clock::time_point last_restart_{};
};

class RunningJail {
 public:
  // An empty handle (pid -1, signal ESRCH, wait fails); also what
  // asio::co_spawn needs to complete a spawn() with an exception.
  RunningJail() = default;
  RunningJail(RunningJail&&) noexcept;
  RunningJail& operator=(RunningJail&&) noexcept;
  ~RunningJail();

  pid_t pid() const;  // the jail's init, in brig's pid namespace
  // The spec's listeners (jail::RunningJail::take_listeners), in its order;
  // empty after the first call.
  std::vector<UniqueFd> take_listeners();
  // Sends `sig` to the init (which forwards HUP INT QUIT TERM USR1 USR2
  // WINCH CONT to the command; SIGKILL ends the whole jail). 0 or errno
  // (ESRCH once the jail's end is known).
  int signal(int sig) const;
  // Waits until the jail ended and returns how (exit, signal, timeout by
  // the spec's wall_time, setup failure inside the jail, with rusage and
  // duration). Fails if the spawner died meanwhile. Cancelling the co_await
  // (asio cancellation) kills the jail, then throws operation_aborted; the
  // spawner still reports the end, which is dropped. Call once.
  asio::awaitable<Result<jail::Outcome>> wait();

 private:
  friend class Spawner;
  explicit RunningJail(std::shared_ptr<detail::JailState> state);
  std::shared_ptr<detail::JailState> state_;
};

}  // namespace brig::spawner
