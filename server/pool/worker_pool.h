// WorkerPool (server side): the warm brig-worker processes that run file
// operations for one `brig serve`, each inside a jail built from the
// server's policy and started through the spawner. Two lanes, so a long
// search never blocks a read. Each lane has up to kWorkersPerLane workers
// (the second started when a call finds the first busy); a connection's
// calls run in one of them at a time and in order, and calls that write run
// one at a time, so no edit is lost to another (docs/server.md, "File
// workers"). Calls waiting for a worker queue, connections taking turns
// (FairQueue): a client whose call runs long, or that does not read its
// replies, holds at most one worker while others go on in the rest. A
// worker that dies, overruns its deadline or whose call is cancelled
// mid-operation is killed (with its jail) and replaced on the next call.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/steady_timer.hpp>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "server/files/op.h"
#include "server/pool/fair_queue.h"
#include "server/pool/write_journal.h"
#include "server/sandbox/sandbox.h"
#include "server/spawner/spawner.h"
#include "server/worker/wire.h"

namespace brig::pool {

// The caller's output, as far as the pool needs it: an operation runs only
// while the replies before it have been read (Transport::output_backlogged),
// so a client that does not read its answers gets no more of them made.
struct ReplyRoom {
  std::function<bool()> full;                      // empty: never full
  std::function<asio::awaitable<void>()> drained;  // returns once full() may be false
};

// How a call's error begins when its worker could not be started (and so
// says nothing about the path the call named).
inline constexpr std::string_view kWorkerStartFailed = "start the file worker in its jail";

enum class WorkerLane {
  files,   // read, write, edit, list: short operations
  search,  // find_files and search: may run long; cancelling one kills this lane's worker
};

// The jail a worker runs in: the sandbox's, plus the worker executable bound
// read-only at its own path (it may live outside everything the policy
// shows), without the wall-time limit (the worker is long-lived; each call
// has its own deadline). Pure.
jail::JailSpec worker_jail_spec(const jail::JailSpec& sandbox_spec, const std::string& worker_path);

// Why a worker's jail ended while it ran `op`, for the call's error: the
// operation, the exit status or the signal, and the jail's limit that
// signal points to, if one does (SIGXFSZ: the file size limit; SIGXCPU: the
// CPU time limit; SIGKILL, SIGSEGV, SIGBUS or SIGABRT with a memory limit:
// that limit, as a possible cause). Pure.
std::string worker_death_text(const jail::Outcome& outcome, const jail::Limits& limits,
                              std::string_view op);

class WorkerPool {
 public:
  // sandbox and its spawner must outlive the pool. worker_path: brig-worker.
  // journal_root: where the pool records its writes' temporary files
  // (WriteJournal, for sandbox's workspace and uid); empty, or where the
  // sandbox's jails can write (warned): nowhere, and a server killed
  // mid-write leaves its temporary file. With a journal, the
  // pool first adopts what dead servers left there and removes those files
  // through its worker, as soon as the executor runs.
  WorkerPool(asio::any_io_executor executor, const sandbox::Sandbox& sandbox,
             std::string worker_path, std::string journal_root = {});
  ~WorkerPool();

  // Runs `op` with `args` in the lane's worker (starting one if needed).
  // The operation itself stops at `timeout` and says how far it got; a
  // worker still silent `kKillGrace` later is killed and the call fails.
  // Fails when no worker could be started or the worker died mid-call.
  // Cancelling the co_await kills the lane's worker, then rethrows. Calls
  // waiting for the lane are served a `connection` at a time, in turn
  // (ToolContext::connection()); one whose turn comes while its `room` is
  // full gives the turn up, waits for room, and queues again.
  asio::awaitable<Result<files::OpReply>> call(WorkerLane lane, std::string op, protocol::Json args,
                                               std::chrono::milliseconds timeout,
                                               std::size_t max_bytes, std::uint64_t connection = 0,
                                               ReplyRoom room = {});

  // Kills every worker; later calls start new ones. Pending removals of
  // killed writes' temporary files wait for the next call (or, journaled,
  // the next server).
  void stop();

  // The journal_root the pool was given (for other users' pools).
  const std::string& journal_root() const { return journal_root_; }
  // The pool's journal; null without one (for tests).
  const WriteJournal* journal() const { return journal_.get(); }

  // The jail init of the lane's first worker; 0 when none runs (for logs
  // and tests).
  pid_t worker_pid(WorkerLane lane) const;
  // How many of the lane's workers run (for tests).
  std::size_t workers_running(WorkerLane lane) const;

  // Workers per lane: one runs a connection's calls while another's wait
  // for nothing but a free worker. Each is a jail of its own (a few MiB);
  // all start at the lane's first call, the others in the background.
  static constexpr std::size_t kWorkersPerLane = 2;

  // How long past its own deadline an operation may take to answer.
  static constexpr std::chrono::seconds kKillGrace{5};
  // How long removing a killed write's temporary files may take.
  static constexpr std::chrono::seconds kSweepTimeout{10};
  // A temporary file still held (its killed worker not yet gone) is tried
  // again this many times, this far apart; then its journal entry waits for
  // the next server.
  static constexpr unsigned kHeldRetries = 8;
  static constexpr std::chrono::milliseconds kHeldRetryDelay{250};

 private:
  struct Worker;
  // One worker's place in a lane, and who uses it.
  struct Slot {
    bool busy = false;
    std::uint64_t connection = 0;  // whose call runs, while busy
    bool writes = false;           // that call writes files
    std::unique_ptr<Worker> worker;
  };
  // A call waiting for a slot: woken (its timer cancelled) with `granted`
  // set when a slot is handed to it.
  struct Waiter {
    asio::steady_timer wake;
    std::uint64_t connection = 0;
    bool writes = false;
    Slot* granted = nullptr;
  };
  // A killed write's temporary file to remove, and how often it was found
  // held (by the killed worker, not yet dead).
  struct PendingSweep {
    WriteJournal::Entry entry;
    unsigned held = 0;
  };
  struct Lane {
    std::array<Slot, kWorkersPerLane> slots;   // calls hold Slot*
    FairQueue queue;                           // calls waiting for a slot
    std::map<std::uint64_t, Waiter*> waiters;  // by ticket
    // Writes whose worker died or was killed mid-operation: their temporary
    // files are left, and the next worker removes them.
    std::vector<PendingSweep> sweeps;
    // Set when sweeps were added: the lane, once free, runs them at once
    // rather than at its next call, which may never come.
    bool sweep_soon = false;
  };

  // Waits for a slot of the lane (its turn among connections); throws when
  // cancelled while waiting. The caller holds the slot until release().
  asio::awaitable<Slot*> acquire(Lane& lane, std::uint64_t connection, bool writes);
  // Frees the slot and hands free slots to waiters in turn.
  void release(Lane& lane, Slot& slot);
  // Hands free slots to the waiters they may serve, in turn, then starts a
  // due sweep in one still free.
  void dispatch(Lane& lane);
  // A free slot a call of `connection` may take now, or null: the
  // connection has no call running in the lane, and a call that writes
  // finds no other writing. Prefers a slot whose worker runs.
  static Slot* free_slot_for(Lane& lane, std::uint64_t connection, bool writes);

  asio::awaitable<Result<Worker*>> ensure_worker(Slot& slot);
  // Notes `request` in lane.sweeps if it writes a file.
  static void note_killed_write(Lane& lane, const worker::Request& request);
  // Runs lane.sweeps in the slot's worker (starting one); best effort. A
  // temporary file the worker removed (or found gone) leaves the journal.
  asio::awaitable<void> run_sweeps(Lane& lane, Slot& slot);
  // run_sweeps on a slot dispatch() took for it, then releases the slot:
  // detached, so the pool may be gone when it resumes (alive_ says).
  asio::awaitable<void> sweep_detached(std::weak_ptr<int> alive, Lane& lane, Slot& slot);
  // Starts a worker in every free slot that has none, each in the
  // background, holding its slot meanwhile: a call arriving while the
  // first worker is busy finds another ready (or nearly).
  void start_spares(Lane& lane);
  asio::awaitable<void> start_detached(std::weak_ptr<int> alive, Lane& lane, Slot& slot);
  // Adopts the journal entries of dead servers and queues their removal.
  void adopt_orphans();
  // Why the worker's jail ended while it ran `op`: its setup failed (its
  // command never ran: a workspace its user cannot enter, say), or the
  // worker exited or died of a signal (worker_death_text); empty when the
  // jail has not ended within a moment.
  asio::awaitable<std::optional<Error>> death_cause(Worker& worker, const std::string& op);
  // Sends request and reads its reply. Fails when the stream broke; the
  // inner Result is the operation's own outcome.
  asio::awaitable<Result<Result<files::OpReply>>> exchange(Worker& worker,
                                                           const worker::Request& request);

  // Expires with the pool: a detached sweep resuming after the pool is gone
  // touches nothing of it.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  asio::any_io_executor executor_;
  const sandbox::Sandbox& sandbox_;
  std::string worker_path_;
  jail::JailSpec spec_;
  std::uint64_t next_id_ = 1;
  std::uint64_t next_ticket_ = 1;
  std::string journal_root_;
  std::unique_ptr<WriteJournal> journal_;
  bool stopped_ = false;  // stop() ran and no call came since: no sweep starts a worker
  Lane files_;
  Lane search_;
};

}  // namespace brig::pool
