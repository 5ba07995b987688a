#include "server/spawner/spawner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include <spdlog/spdlog.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include "jail/spec_codec.h"
#include "jail/steps/cgroups.h"
#include "server/process/self_exe.h"
#include "server/spawner/messages.h"
#include "server/spawner/spawner_state.h"

namespace brig::spawner {
namespace detail {

int JailState::send_signal(int sig) const {
  if (!pidfd) return ESRCH;
  return ::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0) == 0 ? 0 : errno;
}

void SpawnerCore::dispatch(spawner::Packet& packet) {
  auto it = jails.find(packet.id);
  if (it == jails.end()) {
    spdlog::warn("brig-spawner: reply for unknown request {}", packet.id);
    return;  // its fds close with the packet
  }
  std::shared_ptr<JailState> state = it->second;
  switch (packet.type) {
    case spawner::MessageType::started: {
      auto started = spawner::decode_started_packet(packet);
      if (!started || !*started) {
        // No jail (or none we could hold on to): no EXITED will follow.
        state->started = std::unexpected(started ? started->error() : started.error());
        jails.erase(it);
      } else {
        state->pid = (*started)->pid;
        state->pidfd = std::move((*started)->pidfd);
        state->listeners = std::move((*started)->listeners);
        state->started = Result<void>{};
        if (!state->owned) state->send_signal(SIGKILL);
      }
      break;
    }
    case spawner::MessageType::exited: {
      auto outcome = jail::decode_outcome(packet.body);
      if (!state->started)
        state->started = std::unexpected(Error{"spawn a jail", "spawner protocol",
                                               "brig-spawner reported an end before a start", 0});
      state->outcome = std::move(outcome);
      jails.erase(it);
      break;
    }
    case spawner::MessageType::spawn:
      spdlog::warn("brig-spawner: sent a spawn request for {}", packet.id);
      return;
  }
  state->notify();
}

void SpawnerCore::fail_all(const Error& why) {
  for (auto& [id, state] : jails) {
    if (!state->started) state->started = std::unexpected(why);
    if (!state->outcome) state->outcome = std::unexpected(why);
    state->notify();
  }
  jails.clear();
}

void SpawnerCore::reap(bool block) {
  if (reaped) return;
  if (block) {
    // It exits as soon as it has killed and reaped its jails; one that does
    // not within the bound is stuck, and is killed (its jails die with it,
    // each init watching a pipe that closes).
    pollfd p{pidfd.get(), POLLIN, 0};
    int n;
    while ((n = ::poll(&p, 1, 10'000)) < 0 && errno == EINTR) {
    }
    if (n == 0) ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
  }
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  // ECHILD: someone else reaped it (a SIGCHLD handler); nothing left to do.
  if (r == pid || (r < 0 && errno == ECHILD)) reaped = true;
}

}  // namespace detail

namespace {

using detail::JailState;
using detail::SpawnerCore;

Error spawner_gone(const SpawnerCore& core, std::string why) {
  return Error{"brig-spawner", "pid " + std::to_string(core.pid), std::move(why), 0};
}

// Reads replies until the socket closes. Owns the core meanwhile, so replies
// are dispatched even after the Spawner was dropped mid-spawn.
asio::awaitable<void> read_loop(std::shared_ptr<SpawnerCore> core) {
  Error why = spawner_gone(*core, "closed its socket: it exited or was killed");
  bool dead = false;
  while (!dead) {
    std::error_code ec;
    co_await core->socket.async_wait(asio::posix::stream_descriptor::wait_read,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (!core->alive) co_return;  // ~Spawner closed the socket and failed everything
    if (ec) {
      why = spawner_gone(*core, "waiting on its socket: " + ec.message());
      break;
    }
    for (;;) {
      auto received = spawner::receive_packet(core->socket.native_handle(), MSG_DONTWAIT);
      if (!received && received.error().sys_errno == EAGAIN) break;
      if (!received && received.error().sys_errno == 0) {
        spdlog::warn("brig-spawner: {}", received.error().to_string());
        continue;
      }
      if (!received) {
        why = received.error();
        dead = true;
        break;
      }
      if (received->eof) {
        dead = true;
        break;
      }
      auto packet = spawner::parse_packet(received->bytes);
      if (!packet) {
        spdlog::warn("brig-spawner: {}", packet.error().to_string());
        continue;
      }
      packet->fds = std::move(received->fds);
      core->dispatch(*packet);
    }
  }
  spdlog::error("{}; jails cannot be started until it is restarted", why.to_string());
  core->alive = false;
  core->fail_all(why);
  std::error_code ignored;
  core->socket.close(ignored);
  // Reap it once it has exited, without blocking the event loop.
  if (int fd = ::fcntl(core->pidfd.get(), F_DUPFD_CLOEXEC, 0); fd >= 0) {
    asio::posix::stream_descriptor exited(core->socket.get_executor(), fd);
    co_await exited.async_wait(asio::posix::stream_descriptor::wait_read,
                               asio::redirect_error(asio::use_awaitable, ignored));
  }
  core->reap(false);
  // The jails end with the spawner, but their inits may not remove their
  // cgroups (they run without the permission to) and the spawner is gone:
  // its groups (named for its pid) are removed here once their last task
  // has left them.
  asio::steady_timer pause(core->socket.get_executor());
  for (int i = 0; i < 50; ++i) {
    jail::cgroups::sweep_stale();
    pause.expires_after(std::chrono::milliseconds(100));
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (ignored == asio::error::operation_aborted) break;
  }
}

}  // namespace

namespace {

// Starts brig-spawner and the loop that reads its replies.
Result<std::shared_ptr<SpawnerCore>> start_core(asio::any_io_executor executor,
                                                const std::string& spawner_path, bool jail_pool) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return std::unexpected(sys_error("create the spawner socket", "socketpair", errno));
  UniqueFd ours(sv[0]), theirs(sv[1]);
  // dup2 onto itself would keep close-on-exec: the child's end must not be
  // fd 0 already (nor 1 or 2, which the file actions below replace).
  if (theirs.get() <= STDERR_FILENO) {
    theirs.reset(::fcntl(theirs.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
    if (!theirs) return std::unexpected(sys_error("create the spawner socket", "dup", errno));
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attr);
  // dup2 clears close-on-exec on fd 0 only; closefrom drops anything else
  // the server opened without O_CLOEXEC.
  ::posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  // The server ignores SIGPIPE and may block signals; neither should reach
  // the spawner (ignored dispositions and the mask survive exec).
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  const std::string parent = std::to_string(::getpid());
  char no_pool[] = "--no-jail-pool";
  char* argv[] = {const_cast<char*>(spawner_path.c_str()), const_cast<char*>(parent.c_str()),
                  jail_pool ? nullptr : no_pool, nullptr};
  // An empty environment: the spawner and every jail's init are clones of
  // it, and nothing of the server's environment (API keys) may be in them.
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, spawner_path.c_str(), &actions, &attr, argv, envp);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) return std::unexpected(sys_error("start brig-spawner", spawner_path, rc));
  theirs.reset();

  // The pid cannot be reused before we reap it, so this pidfd is its.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) {
    const int err = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return std::unexpected(sys_error("watch brig-spawner", "pidfd_open", err));
  }
  asio::posix::stream_descriptor socket(executor);
  std::error_code ec;
  socket.assign(ours.get(), ec);
  if (ec) {
    ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
    ::waitpid(pid, nullptr, 0);
    return std::unexpected(Error{"watch brig-spawner's socket", "", ec.message(), ec.value()});
  }
  ours.release();
  auto core = std::make_shared<SpawnerCore>(std::move(socket), pid, std::move(pidfd));
  asio::co_spawn(executor, read_loop(core), asio::detached);
  return core;
}

}  // namespace

Result<std::shared_ptr<Spawner>> Spawner::start(asio::any_io_executor executor,
                                                const std::string& spawner_path, bool jail_pool) {
  auto core = start_core(executor, spawner_path, jail_pool);
  if (!core) return std::unexpected(core.error());
  auto spawner = std::shared_ptr<Spawner>(new Spawner(std::move(*core)));
  spawner->executor_ = std::move(executor);
  spawner->path_ = spawner_path;
  spawner->jail_pool_ = jail_pool;
  return spawner;
}

Result<void> Spawner::restart_if_gone() {
  if (core_->alive) return {};
  // At most one start a second: a spawner that dies at once (a broken
  // install) must not be restarted for every call.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_restart_ < std::chrono::seconds(1))
    return std::unexpected(spawner_gone(*core_, "is not running (restarted less than 1 s ago)"));
  last_restart_ = now;
  // Safe after start-up too: brig-spawner is exec'd with an empty
  // environment and no fd but its socket, so it carries nothing the server
  // has read since (the LLM proxy's keys).
  auto core = start_core(executor_, path_, jail_pool_);
  if (!core) return std::unexpected(core.error());
  spdlog::warn("brig-spawner (pid {}) was gone; started it again as pid {}", core_->pid,
               (*core)->pid);
  core_ = std::move(*core);
  return {};
}

Result<std::string> Spawner::find_program() {
  return process::find_sibling({"brig-spawner", "../libexec/brig/brig-spawner"});
}

Spawner::Spawner(std::shared_ptr<SpawnerCore> core) : core_(std::move(core)) {}

Spawner::~Spawner() {
  const bool was_alive = core_->alive;
  core_->alive = false;
  std::error_code ignored;
  core_->socket.close(ignored);
  if (was_alive) core_->fail_all(spawner_gone(*core_, "shut down"));
  core_->reap(/*block=*/true);
}

pid_t Spawner::pid() const {
  return core_->pid;
}

bool Spawner::alive() const {
  return core_->alive;
}

asio::awaitable<Result<RunningJail>> Spawner::spawn(jail::JailSpec spec,
                                                    jail::ExecRequest request) {
  // A spawner killed meanwhile is started again: the server goes on.
  if (auto restarted = restart_if_gone(); !restarted) co_return std::unexpected(restarted.error());
  // The core, not `this`: the Spawner may be dropped while this waits.
  std::shared_ptr<SpawnerCore> core = core_;
  const std::string bytes = spawner::spawn_message(core->next_id, spec, request);
  if (bytes.size() > spawner::kMaxMessage)
    co_return std::unexpected(Error{"send a spawn request to brig-spawner", "",
                                    "the encoded spec and command take " +
                                        std::to_string(bytes.size()) + " bytes, over the " +
                                        std::to_string(spawner::kMaxMessage) + " a packet holds",
                                    EMSGSIZE});
  auto state = std::make_shared<JailState>(core->socket.get_executor());
  state->id = core->next_id++;
  core->jails.emplace(state->id, state);

  const std::vector<int> fds = spawner::spawn_fds(request);
  for (;;) {
    const int err = spawner::send_packet(core->socket.native_handle(), bytes, fds, MSG_DONTWAIT);
    if (err == 0) break;
    if (err != EAGAIN) {
      core->jails.erase(state->id);
      co_return std::unexpected(sys_error("send a spawn request to brig-spawner",
                                          "pid " + std::to_string(core->pid), err));
    }
    std::error_code ec;
    co_await core->socket.async_wait(asio::posix::stream_descriptor::wait_write,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (!core->alive)
      co_return std::unexpected(state->started && !*state->started
                                    ? state->started->error()
                                    : spawner_gone(*core, "closed its socket"));
    if (ec == asio::error::operation_aborted) {
      core->jails.erase(state->id);  // nothing was sent
      throw std::system_error(ec);
    }
  }

  while (!state->started) {
    std::error_code ec;
    co_await state->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!state->started && ec == asio::error::operation_aborted) {
      // Cancelled from outside: the jail may still be started; it is killed
      // as soon as its pidfd comes, and forgotten when its end is reported.
      state->owned = false;
      throw std::system_error(ec);
    }
  }
  if (!*state->started) co_return std::unexpected(state->started->error());
  co_return RunningJail(std::move(state));
}

}  // namespace brig::spawner
