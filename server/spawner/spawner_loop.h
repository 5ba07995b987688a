// SpawnerLoop: the body of brig-spawner. One thread, one poll() over the
// socket to brig-server, the status pipes of the jails it started and the
// pidfds of the inits still exiting; the timeout is the nearest wall-time
// deadline. A jail's end is reported as soon as its init reports the
// command's status (the rest of the jail dead); its empty cgroups are
// removed right after the report, and the init's own exit, with the
// namespaces' teardown, is reaped afterwards. It only clones, reaps and
// reports: what to run and how to confine it come whole from brig-server
// (messages.h).
#pragma once

#include <poll.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <vector>

#include "jail/base/unique_fd.h"
#include "jail/launcher.h"
#include "server/spawner/jail_pool.h"
#include "server/spawner/messages.h"
#include "server/spawner/namespace_holds.h"

namespace brig::spawner {

class SpawnerLoop {
 public:
  // `socket`: the SOCK_SEQPACKET end to brig-server. `dev_null`: the stdio of
  // a jail for which brig-server sent no fd (the spawner's own fd 0 is the
  // socket, which a jail must never get).
  // `pool`: serve SPAWNs from a jail built ahead when one is ready
  // (jail_pool.h); false, every jail is built for its SPAWN.
  SpawnerLoop(int socket, UniqueFd dev_null, bool pool = true);

  // Serves until brig-server closes the socket or is gone, then kills and
  // reaps every jail. Returns the process's exit status.
  int run();

 private:
  struct Live {
    std::uint64_t id;
    jail::RunningJail jailed;
  };
  // false: the socket closed or failed, time to shut down.
  bool on_socket();
  // While a jail is built ahead (building_), a SPAWN the pool can serve is
  // served; any other waits in deferred_ until the build is done.
  bool on_spawn(Packet&& packet);
  // Sends STARTED for a jail given its command and keeps it; false when the
  // socket is gone.
  bool on_started(std::uint64_t id, jail::RunningJail jailed);
  // The pooled jail for `spec` given `request`, else a fresh one.
  Result<jail::RunningJail> start_jail(const jail::JailSpec& spec,
                                       const jail::ExecRequest& request);
  // Reports how the jail ended; false when the socket is gone. Leaves an
  // init that is still exiting to reap.
  bool report_exit(Live& live);
  // Reports every jail of live_ (polled at fds[i + 1]) whose init reported
  // or exited, or whose deadline passed, and forgets it. false when the
  // socket is gone; *reported: whether any was.
  bool report_ended(const std::vector<pollfd>& fds, bool* reported);
  // Whether to build a jail ahead now, without waiting to be idle: the
  // pool's refill_now(), unless a command runs while a jail is still ready
  // and calls are not coming in a row.
  bool build_now() const;
  // Builds one jail ahead (JailPool::refill), reporting the jails that end
  // while its launcher waits for its network helper.
  void refill_pool();
  // Until `helper_pidfd` polls readable: reports the jails that end and
  // serves SPAWNs from the pool.
  void report_while_building(int helper_pidfd);
  // Reaps the inits among the first `count` of exiting_ whose pidfd polled
  // readable (fds[first + i] for exiting_[i]).
  void reap_exited(const std::vector<pollfd>& fds, std::size_t first, std::size_t count);
  bool send(std::string_view bytes, const std::vector<int>& fds);
  int poll_timeout_ms() const;

  int socket_;
  UniqueFd dev_null_;
  bool use_pool_;
  JailPool pool_;
  // The network namespaces of jails ended since the loop was last idle.
  NamespaceHolds holds_;
  std::vector<Live> live_;
  std::vector<jail::RunningJail> exiting_;  // reported, the init not yet reaped
  bool server_gone_ = false;                // the socket failed while a jail was built
  bool building_ = false;                   // inside refill_pool()
  std::deque<Packet> deferred_;             // SPAWNs that came during a build, in order
  // When the last EXITED went, and whether the last SPAWN came right after
  // it (within kInARow: its client sent the next call on the result).
  std::optional<jail::RunningJail::Clock::time_point> last_report_;
  bool in_a_row_ = false;
};

// Writes "brig-spawner: <message>\n" to stderr with one write(2): no stdio
// buffers, no allocation beyond the line.
void log_line(std::string_view message);

}  // namespace brig::spawner
