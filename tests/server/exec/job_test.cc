// Job over plain child processes (no jail): the paths a jail never takes —
// a process outside the command that holds its pipes, a command that closes
// its stdin — and the waiting primitive itself.
#include "server/exec/job.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/use_awaitable.hpp>

#include "tests/server/exec/exec_test_support.h"

namespace brig::exec {
namespace {

using testing::kDeadline;
using testing::run_until;

// A child of this test running /bin/sh -c script; killed and reaped on
// destruction if the Job did not see it end.
struct Child {
  pid_t pid = -1;
  UniqueFd pidfd;
  bool reaped = false;
  ~Child() {
    if (reaped) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

asio::awaitable<jail::Outcome> wait_child(std::shared_ptr<Child> child) {
  asio::posix::stream_descriptor pidfd(co_await asio::this_coro::executor,
                                       ::dup(child->pidfd.get()));
  co_await pidfd.async_wait(asio::posix::stream_descriptor::wait_read, asio::use_awaitable);
  siginfo_t info{};
  ::waitid(P_PID, static_cast<id_t>(child->pid), &info, WEXITED);
  child->reaped = true;
  jail::Outcome o;
  if (info.si_code == CLD_EXITED) {
    o.kind = jail::Outcome::Kind::exited;
    o.exit_code = info.si_status;
  } else {
    o.kind = jail::Outcome::Kind::signaled;
    o.signal = info.si_status;
  }
  co_return o;
}

class JobTest : public ::testing::Test {
 protected:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }  // as brig-server does

  std::shared_ptr<Job> start(const std::string& script, bool with_stdin = false) {
    int out[2], err[2], in[2] = {-1, -1};
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    if (with_stdin) {
      EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    }
    auto child = std::make_shared<Child>();
    child->pid = ::fork();
    if (child->pid == 0) {
      ::setpgid(0, 0);  // its own group, so that a test can end what it left behind
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      if (with_stdin) ::dup2(in[0], 0);
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    child->pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, child->pid, 0)));
    ::close(out[1]);
    ::close(err[1]);
    if (with_stdin) ::close(in[0]);
    auto spool = [](const char* name) { return std::move(*Spool::create(name)); };
    auto job = std::make_shared<Job>("job-1", ::geteuid(), script, spool("out"), spool("err"));
    Process p;
    p.pid = child->pid;
    p.signal = [child](int sig) { return ::kill(child->pid, sig) == 0 ? 0 : errno; };
    p.wait = [child] { return wait_child(child); };
    job->start(io_.get_executor(), std::move(p), UniqueFd(out[0]), UniqueFd(err[0]),
               UniqueFd(in[1]));
    return job;
  }

  asio::io_context io_;
};

TEST_F(JobTest, ReadsBothStreamsAndTheEnd) {
  auto job = start("echo out; echo err >&2; exit 4");
  ASSERT_TRUE(run_until(io_, [&] { return job->finished(); }));
  EXPECT_EQ(*job->spool(Stream::out).read(0, 100), "out\n");
  EXPECT_EQ(*job->spool(Stream::err).read(0, 100), "err\n");
  EXPECT_EQ(job->outcome()->exit_code, 4);
  EXPECT_EQ(job->signal(SIGTERM), ESRCH);
}

TEST_F(JobTest, StopsReadingPipesThatOutliveTheProcess) {
  // The background sleep keeps stdout open for 300 s; the Job finishes after
  // its drain grace instead (far inside the test's deadline).
  const std::string marker = fmt::format("brig-job-test-holder-{}", ::getpid());
  auto job = start("sh -c 'sleep 300; : " + marker + "' & echo gone");
  EXPECT_TRUE(run_until(io_, [&] { return job->finished(); }));
  EXPECT_EQ(*job->spool(Stream::out).read(0, 100), "gone\n");
  EXPECT_EQ(job->outcome()->exit_code, 0);
  EXPECT_FALSE(testing::processes_with(marker).empty());  // it did outlive the command
  ::kill(-job->pid(), SIGKILL);
  EXPECT_TRUE(run_until(io_, [&] { return testing::processes_with(marker).empty(); }));
}

TEST_F(JobTest, ReportsACommandThatClosedItsStdin) {
  auto job = start("exec 0<&-; echo closed; exec sleep 300", /*with_stdin=*/true);
  ASSERT_TRUE(run_until(io_, [&] { return job->spool(Stream::out).size() > 0; }));
  ASSERT_TRUE(job->has_stdin());
  auto queued = job->write_stdin("lost", false);
  ASSERT_TRUE(queued) << queued.error().to_string();
  EXPECT_EQ(queued->queued, 4u);
  ASSERT_TRUE(run_until(io_, [&] { return !job->has_stdin(); }));
  auto again = job->write_stdin("more", false);
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error().why, ::testing::HasSubstr("closed its stdin"));
  job->kill();
  ASSERT_TRUE(run_until(io_, [&] { return job->finished(); }));
  EXPECT_EQ(job->outcome()->signal, SIGKILL);
  EXPECT_TRUE(job->kill_requested());
}

TEST_F(JobTest, ChangedWakesOnOutputAndAtItsDeadline) {
  auto job = start("read x; echo \"$x\"; exec sleep 300", /*with_stdin=*/true);
  int wakes = 0;
  bool done = false;
  // A deadline far away: only output can end the first wait.
  asio::co_spawn(
      io_,
      [&]() -> asio::awaitable<void> {
        co_await job->changed(Job::Clock::now() + kDeadline);
        ++wakes;
        // An immediate deadline returns without any change.
        co_await job->changed(Job::Clock::now());
        ++wakes;
      },
      [&](std::exception_ptr) { done = true; });
  run_until(
      io_, [] { return false; }, std::chrono::milliseconds(100));
  EXPECT_EQ(wakes, 0);
  ASSERT_TRUE(job->write_stdin("ping\n", false));
  ASSERT_TRUE(run_until(io_, [&] { return done; }));
  EXPECT_EQ(wakes, 2);
  job->kill();
  ASSERT_TRUE(run_until(io_, [&] { return job->finished(); }));
}

}  // namespace
}  // namespace brig::exec
