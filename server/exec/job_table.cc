#include "server/exec/job_table.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include <fmt/format.h>

namespace brig::exec {
namespace {

constexpr std::string_view kIdPrefix = "job-";

std::optional<std::uint64_t> id_number(std::string_view id) {
  if (!id.starts_with(kIdPrefix)) return std::nullopt;
  id.remove_prefix(kIdPrefix.size());
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc() || end != id.data() + id.size() || id.empty()) return std::nullopt;
  return n;
}

}  // namespace

uid_t owner_of(const std::optional<process::PeerCredentials>& peer) {
  return peer ? peer->uid : ::geteuid();
}

JobTable::JobTable(JobLimits limits)
    : limits_(std::move(limits)), budget_(std::make_shared<SpoolBudget>(limits_.spool_budget)) {
  budget_->make_room = [this](std::uint64_t missing) { evict_finished(missing); };
}

JobTable::~JobTable() {
  // Jobs (and their spools) may outlive the table in a coroutine frame.
  budget_->make_room = nullptr;
  kill_all();
}

SpoolLimits JobTable::spool_limits() const {
  SpoolLimits l = limits_.spool;
  l.budget = budget_;
  return l;
}

void JobTable::evict_finished(std::uint64_t missing) {
  std::uint64_t freed = 0;
  // Oldest first: the map is in start order.
  for (auto it = jobs_.begin(); it != jobs_.end() && freed < missing;) {
    Job& job = *it->second;
    if (!job.finished()) {
      ++it;
      continue;
    }
    const std::uint64_t before = budget_->used();
    job.evict_output();
    freed += before - budget_->used();
    job_memory_.erase(it->first);
    handed_.erase(it->first);
    it = jobs_.erase(it);
  }
}

std::string JobTable::next_id() {
  return fmt::format("{}{}", kIdPrefix, next_++);
}

Slot::Slot(Slot&& other) noexcept
    : held_(std::exchange(other.held_, {})), owner_(other.owner_), memory_(other.memory_) {}

Slot::~Slot() {
  give_back();
}

void Slot::give_back() {
  const auto held = held_.lock();
  held_.reset();
  if (!held) return;
  if (auto it = held->by_owner.find(owner_); it != held->by_owner.end() && --it->second == 0)
    held->by_owner.erase(it);
  held->memory -= memory_;
}

CallPlace::CallPlace(CallPlace&& other) noexcept
    : held_(std::exchange(other.held_, {})), connection_(other.connection_) {}

CallPlace::~CallPlace() {
  const auto held = held_.lock();
  if (!held) return;
  if (auto it = held->calls.find(connection_); it != held->calls.end() && --it->second == 0)
    held->calls.erase(it);
}

Result<CallPlace> JobTable::enter_call(std::uint64_t connection) {
  std::size_t& calls = held_->calls[connection];
  if (calls >= limits_.max_exec_calls_per_connection) {
    return std::unexpected(
        Error{"start the command", "",
              fmt::format("{} exec calls of this connection are already running, the most one "
                          "connection may have at once (brig serve {} {}); wait for one to return, "
                          "then call again",
                          calls, kMaxExecCallsOption, limits_.max_exec_calls_per_connection)});
  }
  ++calls;
  return CallPlace(held_, connection);
}

std::size_t JobTable::running_jobs(uid_t owner) const {
  std::size_t n = 0;
  for (std::uint64_t number : handed_) {
    auto it = jobs_.find(number);
    if (it != jobs_.end() && it->second->owner() == owner && !it->second->finished()) ++n;
  }
  return n;
}

Result<void> JobTable::hand_over(const Job& job) {
  const auto n = id_number(job.id());
  if (!n || job.finished()) return {};
  if (const std::size_t running = running_jobs(job.owner());
      running >= limits_.max_jobs_per_owner) {
    return std::unexpected(Error{
        "keep the command running as a job", "",
        fmt::format("it was still running after yield_after, and {} jobs of this user (commands "
                    "that outlived their call) are already running, the most one user may have "
                    "(brig serve {} {}); the command was killed. Wait for a job (job wait) or "
                    "end one (job kill), then run it again, or give it a longer yield_after",
                    running, kMaxJobsOption, limits_.max_jobs_per_owner)});
  }
  handed_.insert(*n);
  return {};
}

Result<Slot> JobTable::reserve(uid_t owner, std::optional<std::uint64_t> memory) {
  sweep();
  std::uint64_t memory_used = held_->memory;
  for (const auto& [n, job] : jobs_) {
    if (job->finished()) continue;
    if (auto m = job_memory_.find(n); m != job_memory_.end()) memory_used += m->second;
  }
  const std::uint64_t needs =
      std::min(memory.value_or(limits_.memory_budget), limits_.memory_budget);
  if ((memory && *memory > limits_.memory_budget) || memory_used > limits_.memory_budget - needs) {
    return std::unexpected(Error{
        "start job", "",
        fmt::format("the server's memory budget for jails running at once would be exceeded: "
                    "running jails may use {} bytes, this one {} (brig serve {} {}); wait for a "
                    "job (job wait) or end one (job kill), or start brig serve with a larger {}",
                    memory_used, memory ? std::to_string(*memory) : std::string("any amount"),
                    kJailsMemoryOption, limits_.memory_budget, kJailsMemoryOption)});
  }
  std::size_t slots = 0;
  for (const auto& [uid, n] : held_->by_owner) slots += n;
  if (const std::size_t all = this->running() + slots; all >= limits_.max_running) {
    return std::unexpected(
        Error{"start job", "",
              fmt::format("the server's budget of jails running at once is reached: {} of {} (brig "
                          "serve {} {}); wait for a job (job wait) or end one (job kill), or start "
                          "brig serve with a larger {}",
                          all, limits_.max_running, kMaxJailsOption, limits_.max_running,
                          kMaxJailsOption)});
  }
  if (budget_->full()) evict_finished(budget_->used() - budget_->limit() + 1);
  if (budget_->full()) {
    return std::unexpected(Error{
        "start job", "",
        fmt::format("the server's output budget is full: running jobs keep {} bytes of output, "
                    "its size (brig serve {} {}); wait for a job (job wait) or end one (job "
                    "kill), or start brig serve with a larger {}",
                    budget_->used(), kSpoolBytesOption, limits_.spool_budget, kSpoolBytesOption)});
  }
  ++held_->by_owner[owner];
  held_->memory += needs;
  return Slot(held_, owner, needs);
}

void JobTable::add(std::shared_ptr<Job> job, Slot slot) {
  if (auto n = id_number(job->id())) {
    job_memory_[*n] = slot.memory_;
    jobs_[*n] = std::move(job);
  }
  slot.give_back();  // the job counts from now on
}

std::shared_ptr<Job> JobTable::find(uid_t owner, std::string_view id) {
  sweep();
  auto n = id_number(id);
  if (!n) return nullptr;
  auto it = jobs_.find(*n);
  if (it == jobs_.end() || it->second->owner() != owner || it->second->abandoned()) return nullptr;
  return it->second;
}

std::vector<std::shared_ptr<Job>> JobTable::list(uid_t owner) {
  sweep();
  std::vector<std::shared_ptr<Job>> out;
  for (const auto& [n, job] : jobs_) {
    if (job->owner() == owner && !job->abandoned()) out.push_back(job);
  }
  return out;
}

void JobTable::remove(std::string_view id) {
  if (auto n = id_number(id)) {
    jobs_.erase(*n);
    job_memory_.erase(*n);
    handed_.erase(*n);
  }
}

void JobTable::kill_all() {
  for (const auto& [n, job] : jobs_) job->kill();
}

asio::awaitable<void> JobTable::stop(std::chrono::milliseconds limit) {
  kill_all();
  const Job::Clock::time_point deadline = Job::Clock::now() + limit;
  // A copy: the table may change while this waits.
  std::vector<std::shared_ptr<Job>> jobs;
  for (const auto& [n, job] : jobs_) jobs.push_back(job);
  for (const auto& job : jobs) {
    while (!job->finished() && Job::Clock::now() < deadline) co_await job->changed(deadline);
  }
}

std::size_t JobTable::running() const {
  std::size_t n = 0;
  for (const auto& [id, job] : jobs_) n += job->finished() ? 0 : 1;
  return n;
}

void JobTable::sweep() {
  const Job::Clock::time_point now = Job::Clock::now();
  std::map<uid_t, std::size_t> finished;
  // Newest first, so that the count reaches the limit at the oldest.
  for (auto it = jobs_.rbegin(); it != jobs_.rend();) {
    const Job& job = *it->second;
    bool drop = false;
    // An abandoned job stays (hidden) until it ended, so that stop() still
    // waits for its jail.
    if (job.finished()) {
      drop = job.abandoned() || now - job.finished_at() >= limits_.retention ||
             ++finished[job.owner()] > limits_.max_finished_per_owner;
    }
    if (drop) {
      job_memory_.erase(it->first);
      handed_.erase(it->first);
      it = std::make_reverse_iterator(jobs_.erase(std::next(it).base()));
    } else {
      ++it;
    }
  }
}

}  // namespace brig::exec
