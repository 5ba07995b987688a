// WorkerPool with real brig-worker processes in jails planned from the
// shipped default policy: operations run in the jail, a dead worker is
// replaced, and stopping the pool leaves no process behind.
#include "server/pool/worker_pool.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <vector>

#include <gtest/gtest.h>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include "tests/server/test_support.h"

namespace brig::pool {
namespace {

using protocol::Json;
using server::testing::sibling_binary;
using server::testing::TempDir;

bool process_exists(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno != ESRCH;
}

// Issue 15: a dead worker was reported as "the worker exited", with no cause.
TEST(WorkerDeathText, NamesTheCallTheSignalAndTheLimitItPointsTo) {
  jail::Limits limits;
  limits.file_size_bytes = 1 << 20;
  limits.memory_bytes = 4ull << 30;
  jail::Outcome o;
  o.kind = jail::Outcome::Kind::signaled;
  o.signal = SIGXFSZ;
  EXPECT_EQ(worker_death_text(o, limits, "write_file"),
            "the worker was killed by signal 25 (SIGXFSZ) during write_file: a file reached the "
            "jail's file size limit of 1048576 bytes (RLIMIT_FSIZE)");
  o.signal = SIGSEGV;
  EXPECT_EQ(worker_death_text(o, limits, "find_files"),
            "the worker was killed by signal 11 (SIGSEGV) during find_files; the jail's memory "
            "limit of 4294967296 bytes can end a process this way");
  EXPECT_EQ(worker_death_text(o, jail::Limits{}, "find_files"),
            "the worker was killed by signal 11 (SIGSEGV) during find_files");
  o.kind = jail::Outcome::Kind::exited;
  o.exit_code = 3;
  EXPECT_EQ(worker_death_text(o, limits, "search"),
            "the worker exited with status 3 during search");
}

class WorkerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(ws_.file("hello.txt")) << "hello\n";
    std::ofstream(outside_.file("secret.txt")) << "secret\n";
    auto sandbox = sandbox::plan_sandbox("default", ws_.path(), ws_.path());
    ASSERT_TRUE(sandbox) << sandbox.error().to_string();
    sandbox_ = std::move(*sandbox);
    auto spawner = spawner::Spawner::start(io_.get_executor(), sibling_binary("brig-spawner"));
    ASSERT_TRUE(spawner) << spawner.error().to_string();
    sandbox_.spawner = std::move(*spawner);
    pool_.emplace(io_.get_executor(), sandbox_, sibling_binary("brig-worker"));
  }

  Result<files::OpReply> call(WorkerLane lane, std::string op, Json args) {
    auto future = asio::co_spawn(
        io_, pool_->call(lane, op, std::move(args), std::chrono::seconds(30), 1 << 20),
        asio::use_future);
    // The spawner's reader keeps the context busy: run until the call is done.
    const auto deadline = std::chrono::steady_clock::now() + server::testing::kDeadline;
    io_.restart();
    while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < deadline)
      io_.run_one_for(std::chrono::milliseconds(10));
    if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ADD_FAILURE() << op << " did not finish";
      return std::unexpected(Error{"test call", op, "no answer"});
    }
    return future.get();
  }

  // Starts a call of `connection` without waiting for it.
  std::future<Result<files::OpReply>> start(WorkerLane lane, std::string op, Json args,
                                            std::uint64_t connection) {
    return asio::co_spawn(io_,
                          pool_->call(lane, std::move(op), std::move(args),
                                      std::chrono::seconds(30), 1 << 20, connection),
                          asio::use_future);
  }
  // Runs the executor until `done` holds (false after the deadline).
  template <class Pred>
  bool pump_until(Pred done, std::chrono::milliseconds limit = server::testing::kDeadline) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_one_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  asio::io_context io_;
  TempDir ws_;
  TempDir outside_;
  sandbox::Sandbox sandbox_;
  std::optional<sandbox::Sandbox> broken_;  // before pool_: outlives a pool made on it
  std::optional<WorkerPool> pool_;
};

TEST_F(WorkerPoolTest, OperationsRunInTheJailAndSeeOnlyWhatThePolicyShows) {
  auto read = call(WorkerLane::files, "read_file", {{"path", "hello.txt"}});
  ASSERT_TRUE(read) << read.error().to_string();
  EXPECT_EQ(read->bytes, "hello\n");
  const pid_t worker = pool_->worker_pid(WorkerLane::files);
  EXPECT_GT(worker, 0);
  EXPECT_EQ(pool_->worker_pid(WorkerLane::search), 0) << "lanes start on first use";

  // The control: the host can read it, the worker cannot even see it.
  ASSERT_EQ(::access(outside_.file("secret.txt").c_str(), R_OK), 0);
  auto secret = call(WorkerLane::files, "read_file", {{"path", outside_.file("secret.txt")}});
  ASSERT_FALSE(secret);
  EXPECT_EQ(secret.error().sys_errno, ENOENT) << secret.error().to_string();
  EXPECT_EQ(pool_->worker_pid(WorkerLane::files), worker) << "a failed operation keeps its worker";
}

// Issue 15: a pool with a write journal takes over what a dead server left
// there and removes exactly those temporary files as soon as its executor
// runs, with no call; a pool destroyed before that leaves nothing that runs
// on it later.
TEST_F(WorkerPoolTest, AJournaledPoolRemovesADeadServersTemporaryFilesUnasked) {
  TempDir state;
  const std::string root = state.file("writes");
  const auto leave = [&](const std::string& suffix, const std::string& path) {
    auto dead = WriteJournal::open(root, ws_.path(), sandbox_.context.uid);
    ASSERT_TRUE(dead) << dead.error().to_string();
    ASSERT_TRUE((*dead)->add({suffix, path}));
  };
  leave("0123456789abcdef", "big.txt");
  const std::string left = ws_.file(".big.txt.brig-0123456789abcdef");
  const std::string planted = ws_.file(".big.txt.brig-fedcba9876543210");
  std::ofstream(left) << "left by a killed server";
  std::ofstream(planted) << "brig's pattern, not brig's file";

  pool_.emplace(io_.get_executor(), sandbox_, sibling_binary("brig-worker"), root);
  ASSERT_NE(pool_->journal(), nullptr);
  EXPECT_TRUE(server::testing::wait_until([&] {
    io_.restart();
    io_.poll();
    return ::access(left.c_str(), F_OK) != 0;
  })) << "the dead server's temporary file is still there";
  EXPECT_EQ(::access(planted.c_str(), F_OK), 0);
  EXPECT_TRUE(call(WorkerLane::files, "read_file", {{"path", "hello.txt"}}));

  leave("00000000000000aa", "x.txt");
  pool_.emplace(io_.get_executor(), sandbox_, sibling_binary("brig-worker"), root);
  pool_.reset();
  io_.restart();
  io_.run_for(std::chrono::milliseconds(300));  // the sweep it queued finds the pool gone
}

template <class T>
bool ready(const std::future<T>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// The processes under a jail's init (the worker), by /proc's children lists.
std::vector<pid_t> descendants(pid_t pid) {
  std::vector<pid_t> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  for (pid_t child; in >> child;) {
    out.push_back(child);
    for (pid_t d : descendants(child)) out.push_back(d);
  }
  return out;
}

// Stops (or continues) the lane's first worker: its call then runs until
// the test lets it go, as a long search or a read whose reply nobody reads
// would.
void signal_worker(pid_t jail_init, int sig) {
  const std::vector<pid_t> worker = descendants(jail_init);
  ASSERT_FALSE(worker.empty()) << "no process under jail init " << jail_init;
  for (pid_t p : worker) ASSERT_EQ(::kill(p, sig), 0) << p;
}

// Issue 15: one connection's call that runs long (a stalled client's read,
// a long search) held the one worker of its lane, and every other client's
// call waited behind it. A second worker serves the others meanwhile; the
// long call's own connection still waits for it, so its calls keep their
// order.
TEST_F(WorkerPoolTest, ALongCallHoldsOneWorkerWhileOtherConnectionsCallsRun) {
  ASSERT_TRUE(call(WorkerLane::files, "read_file", {{"path", "hello.txt"}}));
  const pid_t first = pool_->worker_pid(WorkerLane::files);
  ASSERT_GT(first, 0);
  signal_worker(first, SIGSTOP);
  auto held = start(WorkerLane::files, "read_file", {{"path", "hello.txt"}}, 1);
  auto same_connection = start(WorkerLane::files, "read_file", {{"path", "hello.txt"}}, 1);
  auto other = start(WorkerLane::files, "list_directory", {{"path", "."}}, 2);
  const bool other_done = pump_until([&] { return ready(other); });
  EXPECT_FALSE(ready(held));
  EXPECT_FALSE(ready(same_connection)) << "ran beside its own connection's earlier call";
  EXPECT_EQ(pool_->workers_running(WorkerLane::files), 2u);
  signal_worker(first, SIGCONT);
  ASSERT_TRUE(other_done) << "another connection's call waited for the stopped worker";
  auto listed = other.get();
  EXPECT_TRUE(listed) << listed.error().to_string();
  ASSERT_TRUE(pump_until([&] { return ready(held) && ready(same_connection); }));
  EXPECT_TRUE(held.get());
  EXPECT_TRUE(same_connection.get());
  EXPECT_EQ(pool_->worker_pid(WorkerLane::files), first) << "a stopped worker is not a dead one";
}

// The lane's first call starts its other worker too, in the background: a
// call arriving while the first is busy would otherwise wait for a start.
TEST_F(WorkerPoolTest, TheFirstCallStartsTheLanesOtherWorkerInTheBackground) {
  ASSERT_TRUE(call(WorkerLane::files, "read_file", {{"path", "hello.txt"}}));
  EXPECT_TRUE(pump_until([&] { return pool_->workers_running(WorkerLane::files) == 2; }));
  EXPECT_EQ(pool_->workers_running(WorkerLane::search), 0u) << "only the lane that was used";
  pool_->stop();
  EXPECT_EQ(pool_->workers_running(WorkerLane::files), 0u);

  // stop() while the other worker is still starting: it does not outlive it.
  ASSERT_TRUE(call(WorkerLane::search, "find_files", {{"pattern", "*.txt"}}));
  pool_->stop();
  pump_until([] { return false; }, std::chrono::milliseconds(500));
  EXPECT_EQ(pool_->workers_running(WorkerLane::search), 0u);
}

// Two edits of one file from two clients must not both read it before
// either writes: writes run one at a time, whatever worker is free. A read
// goes on beside a write.
TEST_F(WorkerPoolTest, WritesRunOneAtATimeWhileReadsRunBesideThem) {
  ASSERT_TRUE(call(WorkerLane::files, "read_file", {{"path", "hello.txt"}}));
  const pid_t first = pool_->worker_pid(WorkerLane::files);
  signal_worker(first, SIGSTOP);
  auto write1 = start(WorkerLane::files, "write_file", {{"path", "a.txt"}, {"content", "1"}}, 1);
  auto write2 = start(WorkerLane::files, "write_file", {{"path", "b.txt"}, {"content", "2"}}, 2);
  auto read = start(WorkerLane::files, "read_file", {{"path", "hello.txt"}}, 3);
  const bool read_done = pump_until([&] { return ready(read); });
  pump_until([] { return false; }, std::chrono::milliseconds(200));
  EXPECT_FALSE(ready(write2)) << "a second write ran while the first was under way";
  EXPECT_NE(::access(ws_.file("b.txt").c_str(), F_OK), 0);
  signal_worker(first, SIGCONT);
  ASSERT_TRUE(read_done);
  EXPECT_TRUE(read.get());
  ASSERT_TRUE(pump_until([&] { return ready(write1) && ready(write2); }));
  auto w1 = write1.get();
  auto w2 = write2.get();
  EXPECT_TRUE(w1) << w1.error().to_string();
  EXPECT_TRUE(w2) << w2.error().to_string();
  EXPECT_EQ(::access(ws_.file("b.txt").c_str(), F_OK), 0);
}

TEST_F(WorkerPoolTest, AWorkerThatDiedIsReplacedOnTheNextCall) {
  ASSERT_TRUE(call(WorkerLane::files, "read_file", {{"path", "hello.txt"}}));
  const pid_t first = pool_->worker_pid(WorkerLane::files);
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  // Let the spawner reap it and the socket report its end.
  ASSERT_TRUE(server::testing::wait_until([&] {
    io_.restart();
    io_.poll();
    return !process_exists(first);
  }));
  auto again = call(WorkerLane::files, "read_file", {{"path", "hello.txt"}});
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->bytes, "hello\n");
  EXPECT_NE(pool_->worker_pid(WorkerLane::files), first);
}

TEST_F(WorkerPoolTest, UnknownOperationIsAnErrorAndStopLeavesNoWorker) {
  auto bad = call(WorkerLane::files, "format_disk", Json::object());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find("format_disk"), std::string::npos);
  const pid_t worker = pool_->worker_pid(WorkerLane::files);
  ASSERT_GT(worker, 0);
  pool_->stop();
  EXPECT_TRUE(server::testing::wait_until([&] {
    io_.restart();
    io_.poll();
    return !process_exists(worker);
  })) << "worker jail "
      << worker << " still runs after stop()";
}

// A worker whose jail cannot be set up says so, naming the jail's step in
// Error::step (not in where, which names an input) and the missing source.
TEST_F(WorkerPoolTest, AWorkerJailThatFailsSetupNamesTheStep) {
  auto broken = sandbox::plan_sandbox("default", ws_.path(), ws_.path());
  ASSERT_TRUE(broken) << broken.error().to_string();
  broken_.emplace(std::move(*broken));
  broken_->spawner = sandbox_.spawner;
  jail::Mount missing;
  missing.source = missing.target = "/nonexistent/brig-worker-source";
  broken_->spec.mounts.push_back(missing);
  pool_->stop();
  pool_.emplace(io_.get_executor(), *broken_, sibling_binary("brig-worker"));
  auto failed = call(WorkerLane::files, "read_file", Json{{"path", "hello.txt"}});
  ASSERT_FALSE(failed);
  EXPECT_TRUE(failed.error().what.starts_with(kWorkerStartFailed)) << failed.error().to_string();
  EXPECT_EQ(failed.error().step, jail::SetupStep::mount) << failed.error().to_string();
  EXPECT_NE(failed.error().to_string().find("/nonexistent/brig-worker-source"), std::string::npos)
      << failed.error().to_string();
}

}  // namespace
}  // namespace brig::pool
