#include "server/exec/job_table.h"

#include <unistd.h>

#include <charconv>

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

uid_t owner_of(const std::optional<server::PeerCredentials>& peer) {
  return peer ? peer->uid : ::geteuid();
}

JobTable::JobTable(JobLimits limits) : limits_(limits) {}

JobTable::~JobTable() {
  kill_all();
}

std::string JobTable::next_id() {
  return fmt::format("{}{}", kIdPrefix, next_++);
}

Result<void> JobTable::check_capacity(uid_t owner) {
  sweep();
  std::size_t running = 0;
  for (const auto& [n, job] : jobs_) {
    if (job->owner() == owner && !job->finished()) ++running;
  }
  if (running >= limits_.max_running_per_owner) {
    return std::unexpected(Error{
        "start job", "",
        fmt::format("{} jobs are already running; wait for one (job wait) or end one (job kill) "
                    "first",
                    running)});
  }
  return {};
}

void JobTable::add(std::shared_ptr<Job> job) {
  if (auto n = id_number(job->id())) jobs_[*n] = std::move(job);
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
  if (auto n = id_number(id)) jobs_.erase(*n);
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
      it = std::make_reverse_iterator(jobs_.erase(std::next(it).base()));
    } else {
      ++it;
    }
  }
}

}  // namespace brig::exec
