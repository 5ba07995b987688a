// What a Spawner and its RunningJails share, out of the public header. The read
// loop owns a SpawnerCore as long as the socket is open, so a Spawner can be
// dropped while replies are still in flight; every JailState is shared by
// the core (until EXITED came) and by the spawn() or RunningJail waiting on it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include <asio/any_io_executor.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>

#include "jail/base/error.h"
#include "jail/base/unique_fd.h"
#include "jail/outcome.h"
#include "server/spawner/messages.h"

namespace brig::spawner::detail {

struct JailState {
  explicit JailState(asio::any_io_executor executor)
      : wake(std::move(executor), std::chrono::steady_clock::time_point::max()) {}

  // Wakes whoever waits for `started` or `outcome`: their timer wait ends
  // with operation_aborted, and the flag tells them it was news, not a
  // cancellation from outside.
  void notify() { wake.cancel(); }
  // pidfd_send_signal; 0 or errno.
  int send_signal(int sig) const;

  std::uint64_t id = 0;
  asio::steady_timer wake;
  std::optional<Result<void>> started;  // STARTED came, or the spawn failed
  pid_t pid = -1;
  UniqueFd pidfd;
  std::vector<UniqueFd> listeners;               // until the RunningJail's owner takes them
  std::optional<Result<jail::Outcome>> outcome;  // EXITED came, or the spawner is gone
  bool owned = true;  // false: nobody will wait; kill the jail once it is started
  bool waited = false;
};

struct SpawnerCore {
  SpawnerCore(asio::posix::stream_descriptor socket, pid_t pid, UniqueFd pidfd)
      : socket(std::move(socket)), pid(pid), pidfd(std::move(pidfd)) {}

  // One packet from brig-spawner.
  void dispatch(spawner::Packet& packet);
  // The spawner is gone: every spawn and wait in flight fails with `why`.
  void fail_all(const Error& why);
  // Reaps the spawner process; `block`: wait for it (bounded, then SIGKILL).
  void reap(bool block);

  // The SOCK_SEQPACKET end. asio 1.22 has no local::seq_packet_protocol, and
  // only readiness is awaited (recvmsg/sendmsg carry SCM_RIGHTS), so a
  // descriptor serves.
  asio::posix::stream_descriptor socket;
  pid_t pid;
  UniqueFd pidfd;  // the spawner process's
  bool alive = true;
  bool reaped = false;
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, std::shared_ptr<JailState>> jails;  // by request id
};

}  // namespace brig::spawner::detail
