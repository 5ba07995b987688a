// JobTable: the jobs of one server, by id, each owned by the uid that
// started it. A caller sees only its own jobs (a Unix-socket peer's uid; on
// stdio, brig's own). Finished jobs stay readable for `retention`, then are
// dropped; the server kills every job when it shuts down. It also counts
// what limits exec: jails running (server-wide), calls in flight (per
// connection) and jobs that outlived their call (per uid); docs/server.md
// says why each is counted where it is.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <asio/awaitable.hpp>

#include "jail/base/error.h"
#include "server/exec/job.h"
#include "server/exec/spool.h"
#include "server/process/peer_credentials.h"

namespace brig::exec {

struct JobLimits {
  std::chrono::milliseconds retention{10 * 60 * 1000};  // a finished job stays this long
  // Jobs: commands still running after their exec call returned (past
  // yield_after), per uid, since every connection of the uid can reach them.
  std::size_t max_jobs_per_owner = 16;
  // exec calls in flight on one connection, each following its own jail:
  // one client cannot take the whole server's budget of jails.
  std::size_t max_exec_calls_per_connection = 16;
  std::size_t max_running = 64;             // jails running at once, calls and jobs, all clients
  std::size_t max_finished_per_owner = 64;  // the oldest finished go first
  std::uint64_t spool_budget = std::uint64_t{512} << 20;  // every job's kept output together
  // The memory limits of the jails running at once, together (a jail
  // without one counts as the whole budget): where each jail's limit is
  // enforced as a whole (cgroups), their sum is what they can take.
  std::uint64_t memory_budget = UINT64_MAX;
  SpoolLimits spool;  // per stream of each job (its budget is the table's)
};

// The `brig serve` option that raises JobLimits' server-wide count of jails,
// named in the refusal so that an operator knows what to change (the output
// budget's is kSpoolBytesOption).
inline constexpr const char* kMaxJailsOption = "--max-jails";
inline constexpr const char* kMaxJobsOption = "--max-jobs";
inline constexpr const char* kMaxExecCallsOption = "--max-exec-calls";
inline constexpr const char* kJailsMemoryOption = "--jails-memory";

// The slots a JobTable has handed out and not taken back yet.
struct HeldSlots {
  std::map<uid_t, std::size_t> by_owner;
  std::uint64_t memory = 0;                    // theirs, together
  std::map<std::uint64_t, std::size_t> calls;  // exec calls in flight, by connection
};

// A place for one job, taken before its jail is spawned and counted as a
// running job from then on, so that calls admitted at once cannot overrun a
// budget between the check and the job's start. Given back when dropped
// (also after its table is gone: a coroutine frame may outlive it), unless
// JobTable::add took it with the job.
class Slot {
 public:
  Slot(Slot&& other) noexcept;
  Slot& operator=(Slot&&) = delete;
  ~Slot();

 private:
  friend class JobTable;
  Slot(std::weak_ptr<HeldSlots> held, uid_t owner, std::uint64_t memory)
      : held_(std::move(held)), owner_(owner), memory_(memory) {}
  void give_back();
  std::weak_ptr<HeldSlots> held_;
  uid_t owner_;
  std::uint64_t memory_;
};

// One exec call in flight on its connection, from admission until the call
// returns (whether its command became a job or not). Given back when
// dropped, also after its table is gone.
class CallPlace {
 public:
  CallPlace(CallPlace&& other) noexcept;
  CallPlace& operator=(CallPlace&&) = delete;
  ~CallPlace();

 private:
  friend class JobTable;
  CallPlace(std::weak_ptr<HeldSlots> held, std::uint64_t connection)
      : held_(std::move(held)), connection_(connection) {}
  std::weak_ptr<HeldSlots> held_;
  std::uint64_t connection_;
};

// The uid jobs of this caller belong to: the peer's, or brig's own on stdio.
uid_t owner_of(const std::optional<process::PeerCredentials>& peer);

class JobTable {
 public:
  explicit JobTable(JobLimits limits = {});
  ~JobTable();  // kills every job still running
  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;

  const JobLimits& limits() const { return limits_; }

  // A fresh id ("job-1", "job-2", ...): never reused within this server.
  std::string next_id();
  // A place for an exec call on `connection` (ToolContext::connection());
  // fails when max_exec_calls_per_connection of its calls are in flight.
  // Taken and counted in one step, so calls admitted together never overrun it.
  Result<CallPlace> enter_call(std::uint64_t connection);
  // A slot for a job of `owner` whose jail may use `memory` (nullopt: no
  // limit). Fails when the server runs max_running jails, when the jails'
  // memory limits would exceed memory_budget, or when the output budget is
  // full even after dropping every finished job's output; each refusal names
  // its budget, its size and the option that raises it. Slots count as
  // running jails. (The owner's own limit, max_jobs_per_owner, is checked at
  // hand_over: only a command that outlives its call is one of its jobs.)
  Result<Slot> reserve(uid_t owner, std::optional<std::uint64_t> memory);
  // Limits for a new job's spools: the table's, with its budget.
  SpoolLimits spool_limits() const;
  const SpoolBudget& spool_budget() const { return *budget_; }
  // The job takes its slot's place.
  void add(std::shared_ptr<Job> job, Slot slot);
  // The job's call returns while it runs: from now on it is one of its
  // owner's jobs. Fails (and changes nothing) when the owner already has
  // max_jobs_per_owner of them running; a job that has finished needs no
  // place and is always handed over. Check and count are one step.
  Result<void> hand_over(const Job& job);
  // owner's jobs that outlived their call and still run.
  std::size_t running_jobs(uid_t owner) const;
  // owner's job `id`; nullptr when there is none (or it is another uid's, or
  // abandoned).
  std::shared_ptr<Job> find(uid_t owner, std::string_view id);
  // owner's jobs, oldest first; abandoned ones left out.
  std::vector<std::shared_ptr<Job>> list(uid_t owner);
  void remove(std::string_view id);
  // Kills every running job (server shutdown); they stay listed until dropped.
  void kill_all();
  // kill_all(), then waits (at most `limit`) until every job has finished, so
  // that no job still holds a jail handle when the io_context goes.
  asio::awaitable<void> stop(std::chrono::milliseconds limit);
  // Jobs not finished yet, of every owner.
  std::size_t running() const;
  std::size_t size() const { return jobs_.size(); }

 private:
  // Drops finished jobs past their retention, and the oldest finished ones
  // beyond max_finished_per_owner.
  void sweep();

  // Drops finished jobs' output, oldest first, until `missing` bytes are
  // free or none is left; the jobs go with it.
  void evict_finished(std::uint64_t missing);

  JobLimits limits_;
  std::shared_ptr<SpoolBudget> budget_;
  std::shared_ptr<HeldSlots> held_ = std::make_shared<HeldSlots>();
  std::map<std::uint64_t, std::uint64_t> job_memory_;  // each added job's, by id number
  std::set<std::uint64_t> handed_;                     // jobs that outlived their call, by number
  std::uint64_t next_ = 1;
  std::map<std::uint64_t, std::shared_ptr<Job>> jobs_;  // by the number in the id: start order
};

}  // namespace brig::exec
