#include "server/spawner/spawner_loop.h"

#include <errno.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "jail/steps/cgroups.h"
#include "server/spawner/dumpable_spawn.h"

namespace brig::spawner {
namespace {

// waitid on a pidfd (flags: WEXITED, maybe WNOHANG), retried on EINTR.
// Returns 0 or errno; *exited tells whether a process was reaped.
int reap(int pidfd, int flags, bool* exited = nullptr) {
  siginfo_t info{};
  int rc;
  while ((rc = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, flags)) !=
             0 &&
         errno == EINTR) {
  }
  if (exited) *exited = rc == 0 && info.si_pid != 0;
  return rc == 0 ? 0 : errno;
}

}  // namespace

void log_line(std::string_view message) {
  std::string line = "brig-spawner: ";
  line.append(message);
  line.push_back('\n');
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

// A jail built ahead is built once the spawner has been idle this long,
// unless calls come back to back (JailPool::refill_now). Cloning blocks this
// loop for about a millisecond, and the jail takes a few more to build on
// the CPUs the calls need: started at once after an occasional call, the
// build would meet a call sent right after the last one (which then waits
// for it) and delay a running command's end.
constexpr auto kRefillAfterIdle = std::chrono::milliseconds(10);

// A SPAWN this soon after the last EXITED came in a row: its client sent it
// on that result (through brig-server, ~0.3-1 ms here). Calls spaced by the
// client's own work, or a model's, come later.
constexpr auto kInARow = std::chrono::milliseconds(3);

// The held namespaces (namespace_holds.h) are let go once the loop
// has been idle this long: longer than the gap between calls of a burst
// (each sent on the last one's result, through brig-server), short enough
// that the teardown is over long before a person's or a model's next call.
constexpr auto kReleaseAfterIdle = std::chrono::milliseconds(20);

SpawnerLoop::SpawnerLoop(int socket, UniqueFd dev_null, bool pool)
    : socket_(socket),
      dev_null_(std::move(dev_null)),
      use_pool_(pool),
      holds_(NamespaceHolds::for_this_host()) {}

int SpawnerLoop::run() {
  using Clock = jail::RunningJail::Clock;
  std::vector<pollfd> fds;
  Clock::time_point idle_since = Clock::now();
  // A killed jail whose tasks are still leaving its cgroups would hold this
  // loop, and every other jail's call, for up to 2 s per jail.
  jail::cgroups::defer_busy_removals(true);
  // One set of groups per call otherwise: a tenth of a pooled exec's CPU.
  jail::cgroups::reuse_empty_groups(true);
  std::vector<std::string> given_up;
  for (;;) {
    fds.assign(1, pollfd{socket_, POLLIN, 0});
    // A jail's status pipe is readable when its init reports (or exits:
    // end of file).
    for (const Live& l : live_) fds.push_back(pollfd{l.jailed.status_fd(), POLLIN, 0});
    for (const jail::RunningJail& j : exiting_) fds.push_back(pollfd{j.pidfd(), POLLIN, 0});
    const std::size_t reaping = exiting_.size();  // the last entries of fds
    int timeout = poll_timeout_ms();
    const auto wake_at = [&](Clock::time_point at) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(at - Clock::now());
      const int left_ms = static_cast<int>(std::max<std::int64_t>(left.count(), 0));
      if (timeout < 0 || timeout > left_ms) timeout = left_ms;
    };
    if (build_now()) {
      timeout = 0;
    } else if (pool_.wants_refill()) {
      wake_at(idle_since + kRefillAfterIdle);
    }
    if (const auto due = pool_.shrink_due()) wake_at(*due);
    if (!holds_.empty()) wake_at(idle_since + kReleaseAfterIdle);
    if (const auto retry = jail::cgroups::retry_deferred(&given_up)) wake_at(*retry);
    for (const std::string& path : given_up)
      log_line("cgroup " + path + " still holds tasks a minute after its jail ended; left for " +
               "the next brig's sweep");
    given_up.clear();
    const int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) {
      log_line(std::string("poll: ") + std::strerror(errno));
      break;
    }
    if (n < 0) continue;
    // Jails first: the fds vector still matches live_ here, and a reply sent
    // before a new SPAWN is handled keeps the order of events.
    const auto now = Clock::now();
    bool reported = false;
    const bool socket_ok = report_ended(fds, &reported);
    reap_exited(fds, fds.size() - reaping, reaping);
    if (!socket_ok) break;
    if (fds[0].revents != 0 && !on_socket()) break;
    if (build_now()) {
      // Calls come back to back: the spawner is never idle between them, and
      // the next call takes a jail still ready or the one this builds.
      refill_pool();
      idle_since = Clock::now();
    } else if (n > 0 || reported) {
      idle_since = Clock::now();
    } else if (pool_.wants_refill() && now - idle_since >= kRefillAfterIdle) {
      refill_pool();
      idle_since = Clock::now();
    }
    if (server_gone_) break;
    pool_.shrink_if_idle(Clock::now());
    if (!holds_.empty() && Clock::now() - idle_since >= kReleaseAfterIdle) holds_.release_all();
  }
  // Dropping a RunningJail kills its whole jail and reaps the init; the exiting
  // ones need only the reaping.
  pool_.clear();
  live_.clear();
  holds_.release_all();
  for (const jail::RunningJail& j : exiting_) reap(j.pidfd(), WEXITED);
  exiting_.clear();
  jail::cgroups::reuse_empty_groups(false);
  jail::cgroups::finish_deferred();
  jail::cgroups::defer_busy_removals(false);
  return 0;
}

bool SpawnerLoop::build_now() const {
  // While a command runs and a jail is still ready for the next call, the
  // build waits for the command's end: on two CPUs it would share them with
  // the command, and while its launcher clones the spawner reads no status
  // pipe, so the command's end would be reported only after that. Once the
  // end is reported, the build overlaps the result's way back and the next
  // call's way in instead. With none ready the next call would wait for the
  // build anyway, so it starts at once. And while calls come in a row (each
  // sent on the last one's result), the CPUs are the limit: a build left
  // for the command's end leaves one of them idle while the command runs.
  return pool_.refill_now() && (live_.empty() || pool_.ready() == 0 || in_a_row_);
}

bool SpawnerLoop::report_ended(const std::vector<pollfd>& fds, bool* reported) {
  const auto now = jail::RunningJail::Clock::now();
  bool socket_ok = true;
  for (std::size_t i = live_.size(); i-- > 0;) {
    const bool exited = (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    const auto deadline = live_[i].jailed.deadline();
    if (!exited && !(deadline && *deadline <= now)) continue;
    socket_ok = report_exit(live_[i]) && socket_ok;
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
    *reported = true;
  }
  return socket_ok;
}

// Calls come back to back: the jail for the next one is built while this
// one's command runs, and its launcher waits ~0.5-2 ms for the network
// helper. A command that ends meanwhile is reported then, so its call's
// result does not wait for the next call's jail, and a SPAWN that comes
// then is served from the pool. A SPAWN that needs a fresh jail waits for
// the build (no jail is cloned while the launcher is half-way).
void SpawnerLoop::refill_pool() {
  jail::SpawnOptions options;
  options.wait_readable = [this](int helper_pidfd) { report_while_building(helper_pidfd); };
  building_ = true;
  pool_.refill(options);
  building_ = false;
  while (!deferred_.empty() && !server_gone_) {
    Packet packet = std::move(deferred_.front());
    deferred_.pop_front();
    if (!on_spawn(std::move(packet))) server_gone_ = true;
  }
}

void SpawnerLoop::report_while_building(int helper_pidfd) {
  std::vector<pollfd> fds;
  for (;;) {
    // The helper, the live jails (at i + 1, as report_ended reads them),
    // the socket last.
    fds.assign(1, pollfd{helper_pidfd, POLLIN, 0});
    for (const Live& l : live_) fds.push_back(pollfd{l.jailed.status_fd(), POLLIN, 0});
    fds.push_back(pollfd{socket_, POLLIN, 0});
    const int n = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (n < 0 && errno != EINTR) return;  // the launcher's own wait takes over
    if (n < 0) continue;
    bool reported = false;
    if (!report_ended(fds, &reported) || (fds.back().revents != 0 && !on_socket())) {
      server_gone_ = true;
      return;
    }
    if (fds[0].revents != 0) return;
  }
}

void SpawnerLoop::reap_exited(const std::vector<pollfd>& fds, std::size_t first,
                              std::size_t count) {
  // Only the first `count` were polled; report_exit may have added more.
  for (std::size_t i = count; i-- > 0;) {
    if ((fds[first + i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    reap(exiting_[i].pidfd(), WEXITED);  // readable: it has exited, no blocking
    exiting_.erase(exiting_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

int SpawnerLoop::poll_timeout_ms() const {
  std::optional<jail::RunningJail::Clock::time_point> nearest;
  for (const Live& l : live_)
    if (auto d = l.jailed.deadline(); d && (!nearest || *d < *nearest)) nearest = d;
  if (!nearest) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(*nearest - jail::RunningJail::Clock::now())
          .count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, 24 * 3600 * 1000));
}

bool SpawnerLoop::on_socket() {
  auto received = receive_packet(socket_, 0);
  if (!received) {
    // A packet we cannot even read (truncated) is skipped; a dead socket ends us.
    log_line(received.error().to_string());
    return received.error().sys_errno == 0;
  }
  if (received->eof) return false;
  auto packet = parse_packet(received->bytes);
  if (!packet) {
    log_line(packet.error().to_string());
    return true;
  }
  packet->fds = std::move(received->fds);
  if (packet->type != MessageType::spawn) {
    log_line("unexpected packet type " + std::to_string(static_cast<int>(packet->type)));
    return true;
  }
  return on_spawn(std::move(*packet));
}

bool SpawnerLoop::on_spawn(Packet&& packet) {
  const auto now = jail::RunningJail::Clock::now();
  in_a_row_ = last_report_ && now - *last_report_ <= kInARow;
  auto decoded = decode_spawn_packet(packet);
  if (!decoded) return send(spawn_failed_message(packet.id, decoded.error()), {});
  auto& [spec, request] = *decoded;
  for (int* fd : {&request.stdin_fd, &request.stdout_fd, &request.stderr_fd})
    if (*fd < 0) *fd = dev_null_.get();
  if (building_) {
    // No jail may be cloned now (the launcher is half-way): only a jail
    // built ahead serves, and only while nothing waits before this SPAWN.
    std::optional<jail::RunningJail> pooled;
    if (use_pool_ && deferred_.empty() && pool_.has_ready_for(spec))
      pooled = pool_.take(spec, request);
    if (!pooled) {
      deferred_.push_back(std::move(packet));  // its fds with it
      return true;
    }
    return on_started(packet.id, std::move(*pooled));
  }
  auto jailed = start_jail(spec, request);
  // The packet's stdio fds are closed by the caller once this returns: the
  // jail's child has its own copies now.
  if (!jailed) return send(spawn_failed_message(packet.id, jailed.error()), {});
  return on_started(packet.id, std::move(*jailed));
}

bool SpawnerLoop::on_started(std::uint64_t id, jail::RunningJail jailed) {
  // SCM_RIGHTS gives brig-server its own copy of the pidfd; this process
  // keeps the original to wait on. The listeners go to brig-server only:
  // this process keeps none.
  const std::vector<UniqueFd> listeners = jailed.take_listeners();
  std::vector<int> fds = {jailed.pidfd()};
  for (const UniqueFd& l : listeners) fds.push_back(l.get());
  const bool ok = send(started_message(id, jailed.pid(), listeners.size()), fds);
  live_.push_back(Live{id, std::move(jailed)});
  return ok;
}

Result<jail::RunningJail> SpawnerLoop::start_jail(const jail::JailSpec& spec,
                                                  const jail::ExecRequest& request) {
  if (use_pool_)
    if (auto pooled = pool_.take(spec, request)) return std::move(*pooled);
  return spawn_dumpable([&] { return jail::spawn(spec, request); });
}

bool SpawnerLoop::report_exit(Live& live) {
  // The jail's cgroups (empty: the init reaped everything in them before it
  // reported) are removed after the report, when live.jailed is dropped: a
  // few tens of microseconds of rmdir a call need not wait for.
  auto outcome = jail::wait_until_status(live.jailed, std::nullopt, /*remove_cgroups=*/false);
  if (!outcome)
    return send(exited_message(live.id, jail::setup_failed_outcome(jail::SetupStep::wait,
                                                                   outcome.error().sys_errno,
                                                                   outcome.error().to_string())),
                {});
  const bool ok = send(exited_message(live.id, *outcome), {});
  last_report_ = jail::RunningJail::Clock::now();
  holds_.keep(live.jailed.take_namespace_hold());
  // An init that reported the command's status may still be exiting (the
  // namespaces' teardown): reaped once its pidfd polls readable. One that
  // is already gone was reaped (ECHILD) or is reaped here.
  bool exited = false;
  if (reap(live.jailed.pidfd(), WEXITED | WNOHANG, &exited) == 0 && !exited)
    exiting_.push_back(std::move(live.jailed));
  return ok;
}

bool SpawnerLoop::send(std::string_view bytes, const std::vector<int>& fds) {
  const int err = send_packet(socket_, bytes, fds, 0);
  if (err == 0) return true;
  if (err != EPIPE && err != ECONNRESET)
    log_line(std::string("send to brig-server: ") + std::strerror(err));
  return false;
}

}  // namespace brig::spawner
