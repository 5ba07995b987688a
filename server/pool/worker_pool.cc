#include "server/pool/worker_pool.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <system_error>
#include <utility>
#include <variant>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>

#include "jail/base/unique_fd.h"
#include "jail/child_plan.h"
#include "jail/steps/mounts.h"
#include "server/files/atomic_write.h"
#include "server/files/write_file.h"
#include "server/policy/tool_names.h"
#include "server/policy/writable.h"
#include "server/search/cpu_limit.h"
#include "server/worker/ops.h"

namespace brig::pool {
namespace {

// The connections a sweep of killed writes' temporary files, and a worker
// started ahead, hold their slot as.
constexpr std::uint64_t kSweeper = ~std::uint64_t{0};
constexpr std::uint64_t kStarter = kSweeper - 1;

bool writes_files(std::string_view op) {
  return op == policy::names::kWriteFile || op == policy::names::kEditFile;
}

}  // namespace

using files::OpReply;

struct WorkerPool::Worker {
  spawner::RunningJail jail;
  asio::local::stream_protocol::socket socket;
  worker::ReplyReader reader;
  // What the host looked like to the mounts' planner when the worker was
  // started (null: planning failed). A long-lived worker must not keep
  // showing what the host has changed since: a .git made later (read-only
  // for every jail planned after it) or a hidden file written later (masked
  // only where it exists when the jail is planned).
  std::unique_ptr<jail::mounts::RecordedHost> seen;
  jail::mounts::Plan plan;  // the plan `seen` gave
  // Which directory or file each bind showed (dev, ino), as the jail pool
  // checks too: a workspace moved away and another made at its path plans
  // the same, but the worker would go on writing into the old one, wherever
  // it now is.
  std::vector<jail::BindSourceId> sources;
};

jail::JailSpec worker_jail_spec(const jail::JailSpec& sandbox_spec,
                                const std::string& worker_path) {
  jail::JailSpec spec = sandbox_spec;
  spec.limits.wall_time.reset();
  // The worker opens files, never a connection: a proxy policy's listeners
  // would only be sockets nobody serves, and a filtered policy's veth a way
  // out it has no use for.
  spec.listeners.clear();
  if (spec.network == jail::NetworkMode::filtered) {
    spec.network = jail::NetworkMode::none;
    spec.filter = {};
  }
  // The file tools have no use for git's private layer, and a worker lives
  // on: what write_file put there would reach .git only when it ends. The
  // worker's .git is read-only as a whole.
  for (jail::Mount& m : spec.mounts)
    if (m.kind == jail::Mount::Kind::git) {
      m.kind = jail::Mount::Kind::bind;
      m.source = m.target;
      m.writable = false;
      m.size_bytes = 0;
    }
  // Appended last: every tree it may sit in is mounted before it, and a
  // read-only bind keeps a jailed command from swapping the executable the
  // next worker starts from, even inside a writable workspace.
  jail::Mount bind;
  bind.kind = jail::Mount::Kind::bind;
  bind.source = bind.target = worker_path;
  bind.writable = false;
  spec.mounts.push_back(std::move(bind));
  if (spec.landlock.enabled) spec.landlock.read_only.push_back(worker_path);
  return spec;
}

WorkerPool::WorkerPool(asio::any_io_executor executor, const sandbox::Sandbox& sandbox,
                       std::string worker_path, std::string journal_root)
    : executor_(executor),
      sandbox_(sandbox),
      worker_path_(std::move(worker_path)),
      spec_(worker_jail_spec(sandbox.spec, worker_path_)),
      journal_root_(std::move(journal_root)) {
  if (journal_root_.empty()) return;
  // Not where this pool's jails could write: they could plant entries, or
  // take them away. Checked per pool: another user's jails may write where
  // brig's own cannot.
  if (auto safe = policy::refuse_writable_audit_log(journal_root_ + "/entry", sandbox.spec);
      !safe) {
    spdlog::warn(
        "no write journal at {}: a jail of uid {} can write there ({}); a write in flight when "
        "brig-server is killed will leave its temporary file",
        journal_root_, sandbox.context.uid, safe.error().why);
    journal_root_.clear();
    return;
  }
  auto journal = WriteJournal::open(journal_root_, sandbox.workspace(), sandbox.context.uid);
  if (!journal) {
    spdlog::warn("{}; a write in flight when brig-server is killed will leave its temporary file",
                 journal.error().to_string());
    return;
  }
  journal_ = std::move(*journal);
  adopt_orphans();
}

WorkerPool::~WorkerPool() = default;

void WorkerPool::stop() {
  stopped_ = true;
  for (Lane* lane : {&files_, &search_})
    for (Slot& slot : lane->slots) slot.worker.reset();
}

void WorkerPool::adopt_orphans() {
  std::vector<WriteJournal::Entry> orphans = journal_->adopt_orphans(WriteJournal::kMaxAdopted);
  if (orphans.empty()) return;
  spdlog::info("removing {} temporary file{} of writes a killed brig-server left", orphans.size(),
               orphans.size() == 1 ? "" : "s");
  for (WriteJournal::Entry& e : orphans) files_.sweeps.push_back({std::move(e)});
  files_.sweep_soon = true;
  dispatch(files_);  // starts the sweep
}

asio::awaitable<void> WorkerPool::sweep_detached(std::weak_ptr<int> alive, Lane& lane, Slot& slot) {
  // Started by a post: the pool may have gone before this first ran.
  if (alive.expired()) co_return;
  co_await run_sweeps(lane, slot);
  if (alive.expired()) co_return;
  release(lane, slot);
}

void WorkerPool::start_spares(Lane& lane) {
  for (Slot& slot : lane.slots) {
    if (slot.busy || slot.worker) continue;
    slot.busy = true;
    slot.connection = kStarter;
    slot.writes = false;
    asio::co_spawn(executor_, start_detached(alive_, lane, slot), asio::detached);
  }
}

asio::awaitable<void> WorkerPool::start_detached(std::weak_ptr<int> alive, Lane& lane, Slot& slot) {
  if (alive.expired()) co_return;
  if (!stopped_) {
    // A failure is the next call's to report: it starts the worker again.
    co_await ensure_worker(slot);
    if (alive.expired()) co_return;
    // stop() came while it started: it kills every worker, this one too.
    if (stopped_) slot.worker.reset();
  }
  release(lane, slot);
}

WorkerPool::Slot* WorkerPool::free_slot_for(Lane& lane, std::uint64_t connection, bool writes) {
  Slot* free = nullptr;
  for (Slot& slot : lane.slots) {
    if (slot.busy) {
      // One call of a connection at a time keeps its calls in order (a
      // pipelined write, then a read of it); one write at a time keeps an
      // edit from reading a file another edit is about to replace.
      if (slot.connection == connection || (writes && slot.writes)) return nullptr;
    } else if (free == nullptr || (!free->worker && slot.worker)) {
      free = &slot;
    }
  }
  return free;
}

void WorkerPool::dispatch(Lane& lane) {
  for (;;) {
    Slot* slot = nullptr;
    const auto ticket = lane.queue.pop_first([&](std::uint64_t connection, std::uint64_t t) {
      auto it = lane.waiters.find(t);
      // A waiter gone without its ticket cannot be: acquire() takes both.
      const bool writes = it != lane.waiters.end() && it->second->writes;
      slot = free_slot_for(lane, connection, writes);
      return slot != nullptr;
    });
    if (!ticket) break;
    auto it = lane.waiters.find(*ticket);
    if (it == lane.waiters.end()) continue;
    Waiter& next = *it->second;
    lane.waiters.erase(it);
    slot->busy = true;
    slot->connection = next.connection;
    slot->writes = next.writes;
    next.granted = slot;
    next.wake.cancel();
  }
  // Killed writes' temporary files go now, not at a next call that may
  // never come (issue 15); a call that arrives meanwhile waits its turn for
  // that slot as behind any other.
  if (lane.sweep_soon && !lane.sweeps.empty() && !stopped_) {
    if (Slot* slot = free_slot_for(lane, kSweeper, false)) {
      lane.sweep_soon = false;
      slot->busy = true;
      slot->connection = kSweeper;
      slot->writes = false;
      asio::co_spawn(executor_, sweep_detached(alive_, lane, *slot), asio::detached);
    }
  }
}

asio::awaitable<WorkerPool::Slot*> WorkerPool::acquire(Lane& lane, std::uint64_t connection,
                                                       bool writes) {
  const std::uint64_t ticket = next_ticket_++;
  Waiter waiter{asio::steady_timer(executor_, asio::steady_timer::time_point::max()), connection,
                writes};
  lane.queue.push(connection, ticket);
  lane.waiters.emplace(ticket, &waiter);
  // Served at once when a slot is free for it and nobody waits before it.
  dispatch(lane);
  if (waiter.granted) co_return waiter.granted;
  std::error_code ec;
  try {
    co_await waiter.wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  } catch (...) {
    // A call cancelled before it began to wait is refused by asio at once:
    // the same clean-up as below.
    lane.queue.erase(connection, ticket);
    lane.waiters.erase(ticket);
    if (waiter.granted) release(lane, *waiter.granted);
    throw;
  }
  if (waiter.granted) co_return waiter.granted;
  // Cancelled while waiting: out of the queue, or dispatch() would hand a
  // slot to a frame that is gone.
  lane.queue.erase(connection, ticket);
  lane.waiters.erase(ticket);
  throw std::system_error(asio::error::operation_aborted);
}

void WorkerPool::release(Lane& lane, Slot& slot) {
  slot.busy = false;
  slot.connection = 0;
  slot.writes = false;
  dispatch(lane);
}

asio::awaitable<Result<WorkerPool::Worker*>> WorkerPool::ensure_worker(Slot& slot) {
  const std::weak_ptr<int> alive = alive_;
  if (slot.worker) {
    // A worker that died while idle (killed, out of memory) shows as end of
    // stream: replace it now rather than fail the call on a dead socket.
    char byte;
    const ssize_t n =
        ::recv(slot.worker->socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    const bool running = !(n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK));
    // The planner's distinct questions asked again tell whether a new plan
    // would differ, for a fraction of planning again (docs/server.md).
    if (running && slot.worker->seen && slot.worker->seen->unchanged(jail::mounts::real_host()) &&
        jail::bind_source_ids(slot.worker->plan) == slot.worker->sources)
      co_return slot.worker.get();
    if (running)
      spdlog::info("the host changed what the file worker's jail shows (pid {}); starting another",
                   slot.worker->jail.pid());
    else
      spdlog::warn("file worker (pid {}) is gone; starting another", slot.worker->jail.pid());
    slot.worker.reset();
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    co_return std::unexpected(sys_error("start the file worker", "socketpair", errno));
  UniqueFd ours(pair[0]);
  UniqueFd theirs(pair[1]);
  // Recorded before the spawner plans the jail itself: a change between the
  // two shows at the next call, and the worker is replaced then.
  auto seen = std::make_unique<jail::mounts::RecordedHost>(jail::mounts::real_host());
  auto plan = jail::mounts::plan(spec_, *seen);
  if (!plan) seen.reset();
  std::vector<jail::BindSourceId> sources;
  if (plan) sources = jail::bind_source_ids(*plan);
  // The CPU quota the jail runs under, which the worker cannot see (no
  // /sys in the jail): its searches start no more threads than it allows.
  std::vector<std::string> env;
  static const std::optional<std::size_t> cpus = search::cgroup_cpu_limit();  // once
  if (cpus) env.push_back(fmt::format("{}={}", search::kCpuLimitEnv, *cpus));
  jail::ExecRequest request{.argv = {worker_path_, "--workspace", sandbox_.workspace()},
                            .env = std::move(env),
                            .cwd = sandbox_.workspace(),
                            .stdin_fd = theirs.get(),
                            .stdout_fd = theirs.get(),
                            .stderr_fd = STDERR_FILENO};
  Result<spawner::RunningJail> running = co_await sandbox_.spawner->spawn(spec_, request);
  if (alive.expired()) co_return std::unexpected(Error{"start the file worker", "", "stopped"});
  if (!running) {
    Error e = running.error();
    e.what = std::string(kWorkerStartFailed) + " (" + e.what + ")";
    co_return std::unexpected(std::move(e));
  }
  theirs.reset();
  spdlog::debug("file worker started as pid {}", running->pid());
  slot.worker.reset(new Worker{std::move(*running),
                               asio::local::stream_protocol::socket(
                                   executor_, asio::local::stream_protocol(), ours.release()),
                               worker::ReplyReader(), std::move(seen),
                               plan ? std::move(*plan) : jail::mounts::Plan{}, std::move(sources)});
  co_return slot.worker.get();
}

std::string worker_death_text(const jail::Outcome& outcome, const jail::Limits& limits,
                              std::string_view op) {
  if (outcome.kind == jail::Outcome::Kind::exited) {
    return fmt::format("the worker exited with status {} during {}", outcome.exit_code, op);
  }
  if (outcome.kind != jail::Outcome::Kind::signaled) {
    return fmt::format("the worker ended during {} ({})", op, outcome.to_string());
  }
  const int sig = outcome.signal;
  const char* abbrev = ::sigabbrev_np(sig);
  std::string text = fmt::format("the worker was killed by signal {} (SIG{}) during {}", sig,
                                 abbrev != nullptr ? abbrev : "?", op);
  if (sig == SIGXFSZ && limits.file_size_bytes) {
    text += fmt::format(": a file reached the jail's file size limit of {} bytes (RLIMIT_FSIZE)",
                        *limits.file_size_bytes);
  } else if (sig == SIGXCPU && limits.cpu_seconds) {
    text += fmt::format(": it used the jail's CPU time limit of {} s (RLIMIT_CPU)",
                        *limits.cpu_seconds);
  } else if ((sig == SIGKILL || sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT) &&
             limits.memory_bytes) {
    text += fmt::format("; the jail's memory limit of {} bytes can end a process this way",
                        *limits.memory_bytes);
  }
  return text;
}

asio::awaitable<std::optional<Error>> WorkerPool::death_cause(Worker& w, const std::string& op) {
  using namespace asio::experimental::awaitable_operators;
  // The jail reports a setup failure as soon as its stream closes, and a
  // worker that died ends its jail at once (it is the jail's command).
  asio::steady_timer limit(executor_, std::chrono::seconds(2));
  auto ended = co_await (w.jail.wait() || limit.async_wait(asio::use_awaitable));
  if (ended.index() != 0) co_return std::nullopt;
  const Result<jail::Outcome>& outcome = std::get<0>(ended);
  if (!outcome) co_return std::nullopt;
  if (outcome->kind != jail::Outcome::Kind::setup_failed) {
    co_return Error{"run " + op + " in the file worker", "",
                    worker_death_text(*outcome, spec_.limits, op)};
  }
  co_return Error{.what = std::string(kWorkerStartFailed),
                  .where = "",
                  .why = outcome->setup.message,
                  .sys_errno = outcome->setup.sys_errno,
                  .step = outcome->setup.step};
}

asio::awaitable<Result<Result<files::OpReply>>> WorkerPool::exchange(
    Worker& w, const worker::Request& request) {
  const auto died = [&](const std::string& why) {
    return Error{"run " + request.op + " in the file worker", "", why};
  };
  const std::weak_ptr<int> alive = alive_;
  std::error_code ec;
  co_await asio::async_write(w.socket, asio::buffer(worker::encode_request(request)),
                             asio::redirect_error(asio::use_awaitable, ec));
  if (alive.expired()) co_return std::unexpected(died("the pool is gone"));
  if (ec) co_return std::unexpected(died("the worker is gone (" + ec.message() + ")"));
  char chunk[65536];
  for (;;) {
    auto next = w.reader.next();
    if (!next) co_return std::unexpected(died(next.error().to_string()));
    if (*next) {
      // Replies come in request order and one call runs at a time, so any
      // other id is a broken worker.
      if ((*next)->id != request.id) co_return std::unexpected(died("a reply to another request"));
      co_return Result<Result<files::OpReply>>(std::in_place, std::move((*next)->result));
    }
    const std::size_t n = co_await w.socket.async_read_some(
        asio::buffer(chunk), asio::redirect_error(asio::use_awaitable, ec));
    if (alive.expired()) co_return std::unexpected(died("the pool is gone"));
    if (ec) {
      co_return std::unexpected(died(ec == asio::error::eof
                                         ? "the worker exited"
                                         : "the worker is gone (" + ec.message() + ")"));
    }
    w.reader.feed(std::string_view(chunk, n));
  }
}

asio::awaitable<Result<files::OpReply>> WorkerPool::call(WorkerLane which, std::string op,
                                                         protocol::Json args,
                                                         std::chrono::milliseconds timeout,
                                                         std::size_t max_bytes,
                                                         std::uint64_t connection, ReplyRoom room) {
  using namespace asio::experimental::awaitable_operators;
  Lane& lane = which == WorkerLane::files ? files_ : search_;
  stopped_ = false;
  const bool writes = writes_files(op);
  Slot* held = nullptr;
  for (;;) {
    held = co_await acquire(lane, connection, writes);
    // Checked at the turn, not when the call arrived: a client's backlog of
    // calls queued while its output was empty must not all run once it stops
    // reading (issue 15: 300 reads of 3.5 MB took brig-server to 2 GB).
    if (!room.full || !room.full()) break;
    release(lane, *held);
    co_await room.drained();
  }
  Slot& slot = *held;
  // Set up before any other co_await: a call cancelled right after its
  // grant still passes the slot on.
  struct PutBack {
    WorkerPool& pool;
    Lane& lane;
    Slot& slot;
    ~PutBack() { pool.release(lane, slot); }
  } put_back{*this, lane, slot};

  const bool first = !slot.worker;
  co_await run_sweeps(lane, slot);
  Result<Worker*> w = co_await ensure_worker(slot);
  if (!w) co_return std::unexpected(w.error());
  // The lane's first call (or the first after its workers were stopped or
  // died) starts the others too, in the background once its own runs:
  // started by a later call that finds this one busy, a worker's start
  // would be that call's wait.
  if (first) start_spares(lane);
  // A write's temporary file gets its name from here, recorded before the
  // write starts: should brig-server be killed mid-write, the next server
  // removes that file and nothing else (write_journal.h). The client cannot
  // set this argument: the tools' schemas refuse unknown ones.
  std::string suffix;
  if (writes) {
    suffix = files::random_temp_suffix();
    args[std::string(files::kTempSuffixArg)] = suffix;
    if (journal_) {
      if (auto added = journal_->add({suffix, args.value("path", std::string())}); !added)
        spdlog::warn("{}", added.error().to_string());
    }
  }
  const worker::Request request{next_id_++, std::move(op), std::move(args), timeout, max_bytes};

  asio::steady_timer overrun(executor_, timeout + kKillGrace);
  std::variant<Result<Result<files::OpReply>>, std::monostate> done;
  try {
    done = co_await (exchange(**w, request) || overrun.async_wait(asio::use_awaitable));
  } catch (...) {
    // Cancelled mid-operation: the worker may be deep in a search, and its
    // reply would arrive for a call nobody waits for. Kill it.
    slot.worker.reset();
    note_killed_write(lane, request);
    throw;
  }
  if (done.index() == 1) {
    slot.worker.reset();
    note_killed_write(lane, request);
    co_await run_sweeps(lane, slot);
    co_return std::unexpected(
        Error{"run " + request.op + " in the file worker", "",
              fmt::format(
                  "no answer within {} s; the worker was killed and will be replaced",
                  std::chrono::duration_cast<std::chrono::seconds>(timeout + kKillGrace).count())});
  }
  Result<Result<files::OpReply>> exchanged = std::move(std::get<0>(done));
  if (!exchanged) {
    // The stream broke (the worker died or spoke nonsense, or the call was
    // cancelled, which ends the read with an error, not an exception): no
    // usable worker. Out of the lane first, and its write noted, before any
    // co_await: a cancelled call throws at the next one, and the worker
    // must still go (with its jail) and its temporary file be swept.
    std::unique_ptr<Worker> broken = std::move(slot.worker);
    note_killed_write(lane, request);
    Error e = std::move(exchanged.error());
    if (auto cause = co_await death_cause(*broken, request.op)) e = std::move(*cause);
    // Before the answer, so that a client that sees the write fail finds
    // no temporary file of it (issue 15: a 35 MB one stayed).
    co_await run_sweeps(lane, slot);
    co_return std::unexpected(std::move(e));
  }
  // The worker answered: its write renamed or removed the temporary file.
  if (journal_ && !suffix.empty()) journal_->remove(suffix);
  co_return std::move(*exchanged);  // the operation's own result, failure or not
}

void WorkerPool::note_killed_write(Lane& lane, const worker::Request& request) {
  if (!writes_files(request.op)) return;
  lane.sweeps.push_back({{request.args.value(std::string(files::kTempSuffixArg), std::string()),
                          request.args.value("path", std::string())}});
  lane.sweep_soon = true;
}

asio::awaitable<void> WorkerPool::run_sweeps(Lane& lane, Slot& slot) {
  using namespace asio::experimental::awaitable_operators;
  const std::weak_ptr<int> alive = alive_;
  while (!lane.sweeps.empty() && !stopped_) {
    Result<Worker*> w = co_await ensure_worker(slot);
    if (alive.expired() || !w) co_return;  // kept for the next call
    PendingSweep pending = std::move(lane.sweeps.back());
    lane.sweeps.pop_back();
    const WriteJournal::Entry& entry = pending.entry;
    const worker::Request sweep{
        next_id_++,
        std::string(worker::kSweepTempsOp),
        {{"path", entry.path}, {std::string(files::kTempSuffixArg), entry.suffix}},
        kSweepTimeout,
        64 * 1024};
    asio::steady_timer overrun(executor_, kSweepTimeout + kKillGrace);
    auto done = co_await (exchange(**w, sweep) || overrun.async_wait(asio::use_awaitable));
    if (alive.expired()) co_return;
    if (done.index() == 1 || !std::get<0>(done)) {
      // Its journal entry stays, for the next server.
      slot.worker.reset();
      continue;
    }
    // Held: the killed worker may not be dead yet (its jail goes
    // asynchronously); once it is, its lock goes with it. Anything else the
    // worker left (not a regular file) is not what brig's write left.
    const Result<files::OpReply>& reply = *std::get<0>(done);
    const bool held = reply && reply->header.value("held", false);
    if (held && pending.held < kHeldRetries) {
      ++pending.held;
      lane.sweeps.insert(lane.sweeps.begin(), std::move(pending));
      asio::steady_timer pause(executor_, kHeldRetryDelay);
      std::error_code ec;
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (alive.expired()) co_return;
      continue;
    }
    if (journal_ && !held) journal_->remove(entry.suffix);
  }
}

pid_t WorkerPool::worker_pid(WorkerLane which) const {
  const Lane& lane = which == WorkerLane::files ? files_ : search_;
  for (const Slot& slot : lane.slots)
    if (slot.worker) return slot.worker->jail.pid();
  return 0;
}

std::size_t WorkerPool::workers_running(WorkerLane which) const {
  const Lane& lane = which == WorkerLane::files ? files_ : search_;
  return static_cast<std::size_t>(std::count_if(lane.slots.begin(), lane.slots.end(),
                                                [](const Slot& s) { return s.worker != nullptr; }));
}

}  // namespace brig::pool
