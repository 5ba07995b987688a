// JobTable's server-wide budgets: the output every job keeps (the oldest
// finished job's output goes first, then new jobs are refused) and the
// jails running at once. Jobs here follow pipes the test writes, with a
// stand-in Process: no jail, no child.
#include "server/exec/job_table.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

namespace brig::exec {
namespace {

using namespace std::chrono_literals;

// A job whose output is `output` on stdout. finished: its process has ended
// (and its pipe is closed); else it runs until killed.
std::shared_ptr<Job> start_job(asio::io_context& io, JobTable& table, uid_t owner,
                               const std::string& output, bool finished,
                               std::optional<std::uint64_t> memory = 1) {
  int out[2], err[2];
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
  EXPECT_EQ(::write(out[1], output.data(), output.size()), static_cast<ssize_t>(output.size()));
  ::close(err[1]);
  auto write_end = std::make_shared<UniqueFd>(out[1]);
  auto end = std::make_shared<asio::steady_timer>(io, asio::steady_timer::time_point::max());
  if (finished) {
    write_end->reset();
    end->expires_at(asio::steady_timer::time_point::min());
  }
  Process p;
  p.pid = 1;  // never signalled for real: signal() below stands in
  p.signal = [write_end, end](int) {
    write_end->reset();
    // Also for a wait not begun yet: the job may not have run at all.
    end->expires_at(asio::steady_timer::time_point::min());
    return 0;
  };
  p.wait = [end]() -> asio::awaitable<jail::Outcome> {
    try {
      co_await end->async_wait(asio::use_awaitable);
    } catch (const std::system_error&) {
    }
    jail::Outcome o;
    o.kind = jail::Outcome::Kind::exited;
    co_return o;
  };
  const std::string id = table.next_id();
  auto job =
      std::make_shared<Job>(id, owner, "test", *Spool::create(id + "-out", table.spool_limits()),
                            *Spool::create(id + "-err", table.spool_limits()));
  job->start(io.get_executor(), std::move(p), UniqueFd(out[0]), UniqueFd(err[0]), UniqueFd());
  auto slot = table.reserve(owner, memory);
  EXPECT_TRUE(slot) << slot.error().to_string();
  if (slot) table.add(job, std::move(*slot));
  return job;
}

// Runs io until `job` has read `bytes` of stdout (or finished, when asked).
void settle(asio::io_context& io, const Job& job, std::uint64_t bytes, bool until_finished) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline &&
         (job.spool(Stream::out).size() < bytes || (until_finished && !job.finished()))) {
    // Out of work, the io_context stops; a job started later brings more.
    if (io.stopped()) io.restart();
    io.run_one_for(10ms);
  }
  ASSERT_GE(job.spool(Stream::out).size(), bytes);
  if (until_finished) {
    ASSERT_TRUE(job.finished());
  }
}

class JobTableTest : public ::testing::Test {
 protected:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }
  asio::io_context io_;
};

TEST_F(JobTableTest, AFullOutputBudgetDropsTheOldestFinishedJobsOutputFirst) {
  JobLimits limits;
  limits.spool_budget = 1000;
  JobTable table(limits);
  const std::string a(400, 'a'), b(400, 'b'), c(400, 'c');
  auto first = start_job(io_, table, 1000, a, true);
  settle(io_, *first, 400, true);
  auto second = start_job(io_, table, 1000, b, true);
  settle(io_, *second, 400, true);
  EXPECT_EQ(table.spool_budget().used(), 800u);

  // 400 more do not fit in 1000: the first job's output makes the room.
  auto third = start_job(io_, table, 1000, c, false);
  settle(io_, *third, 400, false);
  EXPECT_TRUE(first->spool(Stream::out).evicted());
  EXPECT_EQ(table.find(1000, first->id()), nullptr);
  auto gone = first->spool(Stream::out).read(0, 10);
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().why.find("--spool-bytes"), std::string::npos) << gone.error().why;
  EXPECT_FALSE(second->spool(Stream::out).evicted());
  EXPECT_EQ(*second->spool(Stream::out).read(0, 1000), b);
  EXPECT_EQ(*third->spool(Stream::out).read(0, 1000), c);
  EXPECT_EQ(table.spool_budget().used(), 800u);
  EXPECT_TRUE(table.reserve(1000, 1));
}

TEST_F(JobTableTest, AnOutputBudgetHeldByRunningJobsRefusesANewJobNamingItsOption) {
  JobLimits limits;
  limits.spool_budget = 1000;
  limits.spool.tail_bytes = 10;
  JobTable table(limits);
  auto running = start_job(io_, table, 1000, std::string(1500, 'x'), false);
  settle(io_, *running, 1500, false);
  // The running job keeps only what fit, and says why.
  EXPECT_TRUE(running->spool(Stream::out).cut_by_budget());
  EXPECT_EQ(running->spool(Stream::out).head_end(), 1000u);
  EXPECT_EQ(table.spool_budget().used(), 1000u);

  auto refused = table.reserve(1000, 1);
  ASSERT_FALSE(refused);
  const std::string why = refused.error().to_string();
  EXPECT_NE(why.find("output budget is full"), std::string::npos) << why;
  EXPECT_NE(why.find("--spool-bytes 1000"), std::string::npos) << why;

  running->kill();
  settle(io_, *running, 1500, true);
  // Finished, its output is the first to go: a new job fits again.
  EXPECT_TRUE(table.reserve(1000, 1)) << table.reserve(1000, 1).error().to_string();
  EXPECT_TRUE(running->spool(Stream::out).evicted());
}

TEST_F(JobTableTest, TheRunningJailsBudgetCountsEveryClientAndRefusesNamingItsOption) {
  JobLimits limits;
  limits.max_running = 2;
  JobTable table(limits);
  auto one = start_job(io_, table, 1000, "", false);
  auto two = start_job(io_, table, 1001, "", false);
  // A third uid, under its own per-uid limit, still meets the server's.
  auto refused = table.reserve(1002, 1);
  ASSERT_FALSE(refused);
  const std::string why = refused.error().to_string();
  EXPECT_NE(why.find("jails running at once"), std::string::npos) << why;
  EXPECT_NE(why.find("--max-jails 2"), std::string::npos) << why;
  one->kill();
  settle(io_, *one, 0, true);
  EXPECT_TRUE(table.reserve(1002, 1));
}

// Admission is one step: slots count before their jobs exist, and come back
// when dropped.
TEST_F(JobTableTest, SlotsCountAsRunningJobsUntilDropped) {
  JobLimits limits;
  limits.max_running = 2;
  JobTable table(limits);
  auto a = table.reserve(1000, 1);
  auto b = table.reserve(1001, 1);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_FALSE(table.reserve(1002, 1)) << "two slots held, none added yet";
  { Slot dropped = std::move(*a); }
  EXPECT_TRUE(table.reserve(1002, 1)) << "a dropped slot comes back";
}

// The jails' memory limits together stay within the budget; one without a
// limit takes all of it.
TEST_F(JobTableTest, TheMemoryBudgetBoundsTheJailsLimitsTogether) {
  JobLimits limits;
  limits.memory_budget = 10;
  JobTable table(limits);
  auto six = start_job(io_, table, 1000, "", false, 6);
  EXPECT_TRUE(table.reserve(1001, 4));
  auto refused = table.reserve(1001, 5);
  ASSERT_FALSE(refused);
  const std::string why = refused.error().to_string();
  EXPECT_NE(why.find("memory budget"), std::string::npos) << why;
  EXPECT_NE(why.find("--jails-memory 10"), std::string::npos) << why;
  EXPECT_FALSE(table.reserve(1001, std::nullopt)) << "no limit: the whole budget";
  EXPECT_FALSE(table.reserve(1001, 11)) << "over the budget alone";
  six->kill();
  settle(io_, *six, 0, true);
  auto all = table.reserve(1001, std::nullopt);
  EXPECT_TRUE(all) << all.error().to_string();
}

// A connection's exec calls are counted from admission until each returns,
// and another connection has its own count.
TEST_F(JobTableTest, CallPlacesCountPerConnectionUntilDropped) {
  JobLimits limits;
  limits.max_exec_calls_per_connection = 2;
  JobTable table(limits);
  auto a = table.enter_call(7);
  auto b = table.enter_call(7);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  auto refused = table.enter_call(7);
  ASSERT_FALSE(refused);
  const std::string why = refused.error().to_string();
  EXPECT_NE(why.find("2 exec calls of this connection"), std::string::npos) << why;
  EXPECT_NE(why.find("--max-exec-calls 2"), std::string::npos) << why;
  EXPECT_TRUE(table.enter_call(8)) << "another connection has its own count";
  { CallPlace returned = std::move(*a); }
  EXPECT_TRUE(table.enter_call(7)) << "a returned call gives its place back";
}

// Only commands that outlived their call count as the owner's jobs: one
// running inside its call takes none, and a finished one never needs a place.
TEST_F(JobTableTest, HandOverCountsOnlyJobsThatOutlivedTheirCall) {
  JobLimits limits;
  limits.max_jobs_per_owner = 1;
  JobTable table(limits);
  auto one = start_job(io_, table, 1000, "", false);
  auto two = start_job(io_, table, 1000, "", false);
  EXPECT_EQ(table.running_jobs(1000), 0u) << "both still inside their calls";
  ASSERT_TRUE(table.hand_over(*one));
  EXPECT_EQ(table.running_jobs(1000), 1u);
  auto refused = table.hand_over(*two);
  ASSERT_FALSE(refused);
  const std::string why = refused.error().to_string();
  EXPECT_NE(why.find("--max-jobs 1"), std::string::npos) << why;
  EXPECT_NE(why.find("killed"), std::string::npos) << why;
  EXPECT_TRUE(table.hand_over(*start_job(io_, table, 1001, "", false))) << "another uid's own";
  two->kill();
  settle(io_, *two, 0, true);
  EXPECT_TRUE(table.hand_over(*two)) << "a finished job needs no place";
  one->kill();
  settle(io_, *one, 0, true);
  EXPECT_EQ(table.running_jobs(1000), 0u);
}

}  // namespace
}  // namespace brig::exec
