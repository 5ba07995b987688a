// The spawner end to end: brig-spawner started from this test's bin/, jails
// built like the launcher tests build them (tests/jail/jail_test_support),
// results read through the asio handle.
#include "server/spawner/spawner.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>

#include "jail/base/unique_fd.h"
#include "server/spawner/jail_pool.h"
#include "tests/jail/jail_test_support.h"

namespace brig::spawner {
namespace {

using jail::Outcome;
using jail::test::base_spec;
using jail::test::bin_dir;
using jail::test::processes_with;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr auto kDeadline = 60s;

// Runs `op` on `io` until it completes (or the deadline passes, a failure).
template <class T>
struct Completion {
  bool done = false;
  std::exception_ptr error;
  std::optional<T> value;
};

template <class T>
void start_op(asio::io_context& io, asio::awaitable<T> op, Completion<T>& c,
              asio::cancellation_slot slot = {}) {
  asio::co_spawn(io, std::move(op),
                 asio::bind_cancellation_slot(slot, [&c](std::exception_ptr e, T v) {
                   c.done = true;
                   c.error = e;
                   if (!e) c.value.emplace(std::move(v));
                 }));
}

template <class... C>
bool run_until(asio::io_context& io, C&... c) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (!(c.done && ...) && std::chrono::steady_clock::now() < deadline) {
    // Out of work (the spawner's read loop ended) stops an io_context.
    if (io.stopped()) io.restart();
    io.run_one_for(100ms);
  }
  return (c.done && ...);
}

template <class T>
T run(asio::io_context& io, asio::awaitable<T> op) {
  Completion<T> c;
  start_op(io, std::move(op), c);
  if (!run_until(io, c)) throw std::runtime_error("operation did not complete within 60 s");
  if (c.error) std::rethrow_exception(c.error);
  return std::move(*c.value);
}

jail::ExecRequest sh(const std::string& script, std::vector<std::string> args = {}) {
  jail::ExecRequest r;
  r.argv = {"/bin/sh", "-c", script};
  for (auto& a : args) r.argv.push_back(std::move(a));
  r.env = {"PATH=/usr/bin:/bin", "LANG=C"};
  return r;
}

struct Pipe {
  Pipe() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) == 0) {
      read.reset(p[0]);
      write.reset(p[1]);
    }
  }
  UniqueFd read, write;
};

// Reads `fd` until EOF or `want` is seen, to a generous deadline.
std::string read_until(int fd, const std::string& want = "") {
  std::string s;
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
    if (!want.empty() && s.find(want) != std::string::npos) break;
  }
  return s;
}

// A /proc file's text; empty when it cannot be read. Not through an
// ifstream: libstdc++ throws when a read fails (ESRCH: the process exited
// between the open and the read).
std::string read_proc(const std::string& path) {
  std::string out;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

// True once `pid` no longer runs (gone, or a zombie nobody reaped yet).
bool process_gone(pid_t pid) {
  const std::string stat = read_proc("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

template <class F>
bool eventually(F f) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (!f()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// The live (not zombie) children of `parent`.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_proc(e.path() / "stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 4 >= stat.size() || stat[paren + 2] == 'Z') continue;
    if (std::atoi(stat.c_str() + paren + 4) == parent) out.push_back(std::stoi(name));
  }
  return out;
}

// Whether `pid` is PID 1 of a pid namespace of its own (a jail's init).
bool is_jail_init(pid_t pid) {
  const std::string status = read_proc("/proc/" + std::to_string(pid) + "/status");
  const auto at = status.find("\nNSpid:");
  if (at == std::string::npos) return false;
  const std::string line = status.substr(at + 1, status.find('\n', at + 1) - at - 1);
  return line.ends_with("\t1") && line.find('\t') != line.rfind('\t');
}

class SpawnerTest : public jail::test::JailTest {
 protected:
  void SetUp() override {
    JailTest::SetUp();
    auto s = Spawner::start(io_.get_executor(), bin_dir() + "/brig-spawner");
    ASSERT_TRUE(s) << s.error().to_string();
    spawner_ = std::move(*s);
    spawner_pid_ = spawner_->pid();
    spec_ = base_spec(workspace_.path());
  }
  void TearDown() override {
    spawner_.reset();
    // Let the read loop see the closed socket before the io_context goes.
    io_.poll();
    // The spawner's jails' cgroups are named for the spawner.
    EXPECT_TRUE(eventually([&] { return jail::test::our_cgroups(spawner_pid_).empty(); }));
    JailTest::TearDown();
  }

  Result<RunningJail> spawn(const jail::ExecRequest& r) { return spawn(spec_, r); }
  Result<RunningJail> spawn(const jail::JailSpec& s, const jail::ExecRequest& r) {
    return run(io_, spawner_->spawn(s, r));
  }
  Result<Outcome> wait(RunningJail& r) { return run(io_, r.wait()); }

  // The fds a jail's command starts with (the probe's "fds": one line each).
  std::string fds_in_a_jail() {
    Pipe out;
    auto r = jail::test::probe_request({"fds"});
    r.stdout_fd = out.write.get();
    auto running = spawn(r);
    if (!running) return "spawn: " + running.error().to_string();
    out.write.reset();
    auto outcome = wait(*running);
    if (!outcome) return "wait: " + outcome.error().to_string();
    if (outcome->exit_status() != 0) return outcome->to_string();
    return read_until(out.read.get());
  }

  // /bin/true through the spawner: it runs and exits 0.
  void expect_true_runs() {
    jail::ExecRequest t;
    t.argv = {"/bin/true"};
    auto running = spawn(t);
    ASSERT_TRUE(running) << running.error().to_string();
    auto outcome = wait(*running);
    ASSERT_TRUE(outcome) << outcome.error().to_string();
    EXPECT_EQ(outcome->exit_status(), 0) << outcome->to_string();
  }

  // Spawns `script` (which must print "ready") and returns once it has.
  RunningJail spawn_ready(const std::string& script, std::vector<std::string> args = {}) {
    Pipe out;
    auto r = sh(script, std::move(args));
    r.stdout_fd = out.write.get();
    auto running = spawn(r);
    if (!running) {
      ADD_FAILURE() << running.error().to_string();
      return RunningJail();
    }
    out.write.reset();
    EXPECT_THAT(read_until(out.read.get(), "ready"), HasSubstr("ready"));
    return std::move(*running);
  }

  // Runs /bin/true through the spawner, then returns the init of the jail
  // it builds ahead for the next spawn: a child of the spawner that is PID 1
  // of its own pid namespace (not the network namespace's short-lived
  // helper), other than that jail's (which may still be exiting); -1 if
  // none comes.
  pid_t jail_built_ahead() {
    jail::ExecRequest t;
    t.argv = {"/bin/true"};
    auto running = spawn(t);
    if (!running) return -1;
    if (auto o = wait(*running); !o || o->exit_status() != 0) return -1;
    const pid_t used = running->pid();
    pid_t ahead = -1;
    eventually([&] {
      for (pid_t c : children_of(spawner_pid_))
        if (c != used && is_jail_init(c)) ahead = c;
      return ahead > 0;
    });
    return ahead;
  }

  // The spawner's children, from one small file (a scan of /proc would
  // leave the spawner idle between calls, which is not back to back).
  std::set<pid_t> spawner_children() const {
    std::set<pid_t> out;
    std::ifstream in("/proc/" + std::to_string(spawner_pid_) + "/task/" +
                     std::to_string(spawner_pid_) + "/children");
    for (pid_t p; in >> p;) out.insert(p);
    return out;
  }

  // Spawns kOnce and waits for it to succeed; true if a jail already
  // waiting (built ahead) ran it. `used` collects the jails: each serves once.
  bool run_once(std::set<pid_t>& used) {
    const std::set<pid_t> before = spawner_children();
    auto running = spawn(kOnce);
    if (!running) {
      ADD_FAILURE() << running.error().to_string();
      return false;
    }
    EXPECT_TRUE(used.insert(running->pid()).second) << "pid " << running->pid() << " twice";
    auto o = wait(*running);
    if (!o) {
      ADD_FAILURE() << o.error().to_string();
      return false;
    }
    EXPECT_EQ(o->exit_status(), 0) << o->to_string();
    return before.contains(running->pid());
  }

  // A jail's /tmp is its own: a jail that served twice would show the mark.
  const jail::ExecRequest kOnce = sh("test ! -e /tmp/brig-used || exit 9; : > /tmp/brig-used");

  // Runs `r` and returns what it wrote to stdout, expecting a jail other
  // than the one built ahead (`ahead`) to run it and that one to go.
  std::string output_instead_of(pid_t ahead, jail::ExecRequest r) {
    Pipe out;
    r.stdout_fd = out.write.get();
    auto running = spawn(r);
    if (!running) {
      ADD_FAILURE() << running.error().to_string();
      return {};
    }
    out.write.reset();
    EXPECT_NE(running->pid(), ahead) << "the jail built ahead ran it";
    auto o = wait(*running);
    EXPECT_TRUE(o) << o.error().to_string();
    EXPECT_TRUE(eventually([&] { return process_gone(ahead); })) << "the stale jail stayed";
    return read_until(out.read.get());
  }

  asio::io_context io_;
  std::shared_ptr<Spawner> spawner_;
  pid_t spawner_pid_ = -1;
  jail::JailSpec spec_;
};

TEST_F(SpawnerTest, ExitCodesComeBack) {
  jail::ExecRequest t;
  t.argv = {"/bin/true"};
  auto running = spawn(t);
  ASSERT_TRUE(running) << running.error().to_string();
  EXPECT_GT(running->pid(), 0);
  auto outcome = wait(*running);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->kind, Outcome::Kind::exited) << outcome->to_string();
  EXPECT_EQ(outcome->exit_code, 0);
  EXPECT_GT(outcome->duration.count(), 0);
  EXPECT_FALSE(outcome->layers.layers.empty());

  auto three = spawn(sh("exit 3"));
  ASSERT_TRUE(three) << three.error().to_string();
  auto o3 = wait(*three);
  ASSERT_TRUE(o3);
  EXPECT_EQ(o3->kind, Outcome::Kind::exited) << o3->to_string();
  EXPECT_EQ(o3->exit_code, 3);
  EXPECT_EQ(three->signal(SIGTERM), ESRCH);
  auto again = wait(*three);
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error().why, HasSubstr("already waited"));
}

TEST_F(SpawnerTest, StdioReachesTheFdsPassed) {
  Pipe in, out, err;
  auto r = sh("read line; echo \"out:$line\"; echo err >&2; echo \"cwd:$(pwd)\"");
  r.cwd = workspace_.path();
  r.stdin_fd = in.read.get();
  r.stdout_fd = out.write.get();
  r.stderr_fd = err.write.get();
  auto running = spawn(r);
  ASSERT_TRUE(running) << running.error().to_string();
  // The spawner holds its own copies: ours can go at once.
  in.read.reset();
  out.write.reset();
  err.write.reset();
  ASSERT_EQ(::write(in.write.get(), "hello\n", 6), 6);
  in.write.reset();
  auto outcome = wait(*running);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->to_string();
  EXPECT_EQ(read_until(out.read.get()), "out:hello\ncwd:" + workspace_.path() + "\n");
  EXPECT_EQ(read_until(err.read.get()), "err\n");
}

// The listeners the jail's network helper made reach brig-server; brig-spawner
// keeps none. Twice: the second jail may be the one built ahead.
TEST_F(SpawnerTest, ListenersComeBackWithTheJail) {
  jail::JailSpec s = spec_;
  s.listeners = {{jail::Listener::Protocol::tcp, 3128}};
  for (int round = 0; round < 2; ++round) {
    Pipe out;
    auto r = jail::test::probe_request({"talk-tcp", "3128", "ping"});
    r.stdout_fd = out.write.get();
    auto running = spawn(s, r);
    ASSERT_TRUE(running) << running.error().to_string();
    out.write.reset();
    std::vector<UniqueFd> listeners = running->take_listeners();
    ASSERT_EQ(listeners.size(), 1u);
    EXPECT_TRUE(running->take_listeners().empty());
    // brig-spawner keeps no copy: none of its fds is this socket.
    struct stat st {};
    ASSERT_EQ(::fstat(listeners[0].get(), &st), 0);
    const std::string mine = "socket:[" + std::to_string(st.st_ino) + "]";
    // brig-spawner is not dumpable: only root may list its fds (the root
    // run checks; unprivileged, the directory cannot be opened).
    EXPECT_TRUE(eventually([&] {
      const std::string dir = "/proc/" + std::to_string(spawner_pid_) + "/fd";
      std::error_code denied;
      std::filesystem::directory_iterator fds(dir, denied);
      if (denied == std::errc::permission_denied && ::geteuid() != 0) return true;
      for (const auto& e : fds) {
        std::error_code ec;
        if (std::filesystem::read_symlink(e.path(), ec).string() == mine) return false;
      }
      return true;
    }));
    pollfd p{listeners[0].get(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10'000), 1);
    UniqueFd c(::accept4(listeners[0].get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(c);
    EXPECT_EQ(read_until(c.get()), "ping");
    ASSERT_EQ(::write(c.get(), "pong", 4), 4);
    c.reset();
    auto outcome = wait(*running);
    ASSERT_TRUE(outcome);
    EXPECT_EQ(outcome->exit_code, 0) << outcome->to_string();
    EXPECT_EQ(read_until(out.read.get()), "reply=pong\n");
  }
}

TEST_F(SpawnerTest, NoStdioMeansDevNull) {
  auto running =
      spawn(sh("test -c /dev/stdin && [ \"$(cat)\" = '' ] && ! test -S /proc/self/fd/0"));
  ASSERT_TRUE(running) << running.error().to_string();
  auto outcome = wait(*running);
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->exit_code, 0) << outcome->to_string();
}

TEST_F(SpawnerTest, TheCommandStartsWithNoSignalIgnoredOrBlocked) {
  // brig-spawner ignores SIGPIPE; none of that may reach the command.
  Pipe out;
  auto r = sh("exec grep -E '^Sig(Ign|Blk)' /proc/self/status");
  r.stdout_fd = out.write.get();
  auto running = spawn(r);
  ASSERT_TRUE(running) << running.error().to_string();
  out.write.reset();
  ASSERT_TRUE(wait(*running));
  EXPECT_EQ(read_until(out.read.get()), "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST_F(SpawnerTest, MissingBindSourceNamesTheMountStep) {
  jail::JailSpec s = spec_;
  jail::Mount m;
  m.kind = jail::Mount::Kind::bind;
  m.source = m.target = "/nonexistent-brig-spawner-test";
  s.mounts.push_back(m);
  jail::ExecRequest t;
  t.argv = {"/bin/true"};
  auto running = spawn(s, t);
  if (!running) {
    EXPECT_EQ(running.error().step, jail::SetupStep::mount) << running.error().to_string();
    EXPECT_THAT(running.error().to_string(), HasSubstr("/nonexistent-brig-spawner-test"));
    return;
  }
  auto outcome = wait(*running);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->kind, Outcome::Kind::setup_failed) << outcome->to_string();
  EXPECT_EQ(outcome->setup.step, jail::SetupStep::mount);
  EXPECT_THAT(outcome->setup.message, HasSubstr("/nonexistent-brig-spawner-test"));
}

TEST_F(SpawnerTest, InvalidSpecIsASpawnError) {
  jail::ExecRequest empty;  // no argv
  auto running = spawn(empty);
  ASSERT_FALSE(running);
  EXPECT_EQ(running.error().step, jail::SetupStep::validate) << running.error().to_string();
  EXPECT_TRUE(spawner_->alive());
}

TEST_F(SpawnerTest, SignalEndsTheJail) {
  RunningJail running = spawn_ready("echo ready; exec sleep 1000");
  EXPECT_EQ(running.signal(SIGTERM), 0);
  auto outcome = wait(running);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->kind, Outcome::Kind::signaled) << outcome->to_string();
  EXPECT_EQ(outcome->signal, SIGTERM);
}

TEST_F(SpawnerTest, CancellingWaitKillsTheJail) {
  RunningJail running = spawn_ready("echo ready; sleep 1000; exit 0", {marker()});
  const pid_t init = running.pid();
  ASSERT_FALSE(processes_with(marker()).empty());
  asio::cancellation_signal cancel;
  Completion<Result<Outcome>> waited;
  start_op(io_, running.wait(), waited, cancel.slot());
  io_.poll();
  EXPECT_FALSE(waited.done);
  cancel.emit(asio::cancellation_type::terminal);
  ASSERT_TRUE(run_until(io_, waited));
  ASSERT_TRUE(waited.error);
  try {
    std::rethrow_exception(waited.error);
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::operation_aborted);
  }
  EXPECT_TRUE(eventually([&] { return process_gone(init) && processes_with(marker()).empty(); }));
  // The spawner consumed the end and goes on serving.
  expect_true_runs();
}

TEST_F(SpawnerTest, DroppingARunningKillsTheJail) {
  pid_t init;
  {
    RunningJail running = spawn_ready("echo ready; sleep 1000; exit 0", {marker()});
    init = running.pid();
  }
  EXPECT_TRUE(eventually([&] {
    io_.poll();
    return process_gone(init) && processes_with(marker()).empty();
  }));
}

TEST_F(SpawnerTest, WallTimeLimitTimesOut) {
  jail::JailSpec s = spec_;
  s.limits.wall_time = std::chrono::milliseconds(300);
  auto running = spawn(s, sh("sleep 1000; exit 0", {marker()}));
  ASSERT_TRUE(running) << running.error().to_string();
  auto outcome = wait(*running);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->kind, Outcome::Kind::timed_out) << outcome->to_string();
  EXPECT_GE(outcome->duration, std::chrono::milliseconds(300));
}

TEST_F(SpawnerTest, TwentyJailsInFlight) {
  constexpr int kJails = 20;
  std::vector<Completion<Result<RunningJail>>> spawned(kJails);
  for (int i = 0; i < kJails; ++i)
    start_op(io_, spawner_->spawn(spec_, sh("sleep 0.2; exit " + std::to_string(i))), spawned[i]);
  for (auto& s : spawned) ASSERT_TRUE(run_until(io_, s));
  std::vector<RunningJail> running;
  for (auto& s : spawned) {
    ASSERT_FALSE(s.error);
    ASSERT_TRUE(*s.value) << s.value->error().to_string();
    running.push_back(std::move(**s.value));
  }
  std::vector<Completion<Result<Outcome>>> ended(kJails);
  for (int i = 0; i < kJails; ++i) start_op(io_, running[i].wait(), ended[i]);
  for (auto& e : ended) ASSERT_TRUE(run_until(io_, e));
  for (int i = 0; i < kJails; ++i) {
    ASSERT_FALSE(ended[i].error);
    ASSERT_TRUE(*ended[i].value) << ended[i].value->error().to_string();
    EXPECT_EQ((*ended[i].value)->kind, Outcome::Kind::exited) << (*ended[i].value)->to_string();
    EXPECT_EQ((*ended[i].value)->exit_code, i);
  }
}

TEST_F(SpawnerTest, EndsAreReportedBeforeTheInitIsReapedAndNoZombieStays) {
  // The spawner reports a jail's end when its init reports the command's
  // status, and reaps the init after it has exited: no zombie is left behind.
  const auto children = [&] {
    std::ifstream in("/proc/" + std::to_string(spawner_pid_) + "/task/" +
                     std::to_string(spawner_pid_) + "/children");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  for (int i = 0; i < 5; ++i) {
    auto running = spawn(sh("exit " + std::to_string(i + 3)));
    ASSERT_TRUE(running) << running.error().to_string();
    auto outcome = wait(*running);
    ASSERT_TRUE(outcome) << outcome.error().to_string();
    EXPECT_EQ(outcome->kind, Outcome::Kind::exited) << outcome->to_string();
    EXPECT_EQ(outcome->exit_code, i + 3);
  }
  // What stays is at most the jails built ahead for the next spawns (calls
  // back to back grow the pool, jail_pool.h), waiting: no zombie.
  EXPECT_TRUE(eventually([&] {
    const std::vector<pid_t> live = children_of(spawner_pid_);
    std::set<pid_t> listed;
    std::istringstream in(children());
    for (pid_t p; in >> p;) listed.insert(p);
    return live.size() <= kMaxAhead && listed == std::set<pid_t>(live.begin(), live.end());
  })) << "children: "
      << children();
}

TEST_F(SpawnerTest, OnlyTheJailsProcessesHoldItsStdio) {
  // The init keeps no copy of the jail's stdio: once the command closes its
  // own, the pipe ends there, while the jail still runs.
  Pipe out;
  auto r = sh("echo ready; exec >&- 2>&-; sleep 1000");
  r.stdout_fd = out.write.get();
  r.stderr_fd = out.write.get();
  auto running = spawn(r);
  ASSERT_TRUE(running) << running.error().to_string();
  out.write.reset();
  std::string got;
  bool eof = false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!eof && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out.read.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    const ssize_t n = ::read(out.read.get(), buf, sizeof buf);
    if (n <= 0) eof = true;
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_TRUE(eof) << "the pipe stayed open while the jail ran";
  EXPECT_EQ(got, "ready\n");
  EXPECT_FALSE(process_gone(running->pid()));  // the jail is still there
}

TEST_F(SpawnerTest, DestroyingTheSpawnerKillsItsJails) {
  RunningJail running = spawn_ready("echo ready; sleep 1000; exit 0", {marker()});
  const pid_t init = running.pid();
  Completion<Result<Outcome>> waited;
  start_op(io_, running.wait(), waited);
  io_.poll();
  spawner_.reset();
  ASSERT_TRUE(run_until(io_, waited));
  ASSERT_FALSE(waited.error);
  ASSERT_FALSE(*waited.value);
  EXPECT_THAT(waited.value->error().to_string(), HasSubstr("brig-spawner"));
  EXPECT_TRUE(process_gone(spawner_pid_));
  EXPECT_TRUE(eventually([&] { return process_gone(init) && processes_with(marker()).empty(); }));
}

TEST_F(SpawnerTest, KilledSpawnerLeavesNoJailFailsWhatIsPendingAndIsStartedAgain) {
  ASSERT_GT(jail_built_ahead(), 0);
  RunningJail running = spawn_ready("echo ready; sleep 1000; exit 0", {marker()});
  const pid_t init = running.pid();
  // With a jail running, the next one is built ahead once the spawner idles.
  pid_t ahead = -1;
  ASSERT_TRUE(eventually([&] {
    for (pid_t c : children_of(spawner_pid_))
      if (c != init && is_jail_init(c)) ahead = c;
    return ahead > 0;
  }));
  Completion<Result<Outcome>> waited;
  start_op(io_, running.wait(), waited);
  io_.poll();
  ASSERT_EQ(::kill(spawner_pid_, SIGKILL), 0);
  ASSERT_TRUE(run_until(io_, waited));
  ASSERT_FALSE(waited.error);
  ASSERT_FALSE(*waited.value);
  EXPECT_THAT(waited.value->error().to_string(), HasSubstr("closed its socket"));
  EXPECT_FALSE(spawner_->alive());
  // Each init watches a pipe the spawner held: it ends its jail; the one
  // built ahead ends when the socket it awaits its command on closes (or, if
  // the spawner died while building it, the one it awaits its go byte on).
  // This test is a child subreaper: what the spawner leaves comes to it (the
  // inits, a network namespace helper, the spawner's own zombie, which the
  // handle reaps otherwise), and is reaped here.
  std::set<pid_t> ended;
  EXPECT_TRUE(eventually([&] {
    io_.poll();
    for (pid_t r; (r = ::waitpid(-1, nullptr, WNOHANG)) > 0;) ended.insert(r);
    // One the spawner reaped before it died is gone without coming here.
    for (pid_t pid : {init, ahead})
      if (process_gone(spawner_pid_) && ::kill(pid, 0) != 0) ended.insert(pid);
    return ended.contains(init) && ended.contains(ahead) && children_of(::getpid()).empty() &&
           processes_with(marker()).empty();
  }));
  // The handle reaps the dead spawner once its pidfd says it exited; until
  // then it is a zombie child of this test, which TearDown would count.
  const std::string proc = "/proc/" + std::to_string(spawner_pid_);
  EXPECT_TRUE(eventually([&] {
    io_.poll();
    return ::access(proc.c_str(), F_OK) != 0;
  })) << "brig-spawner was never reaped";
  // The next spawn starts a new spawner (issue 15: the server goes on).
  jail::ExecRequest t;
  t.argv = {"/bin/true"};
  auto after = spawn(t);
  ASSERT_TRUE(after) << after.error().to_string();
  EXPECT_TRUE(spawner_->alive());
  EXPECT_NE(spawner_->pid(), spawner_pid_);
}

TEST_F(SpawnerTest, CancellingSpawnKillsTheJailOnceStarted) {
  asio::cancellation_signal cancel;
  Completion<Result<RunningJail>> spawned;
  start_op(io_, spawner_->spawn(spec_, sh("sleep 1000; exit 0", {marker()})), spawned,
           cancel.slot());
  // The request is sent on the first step; cancel before the reply is read.
  io_.poll();
  ASSERT_FALSE(spawned.done);
  cancel.emit(asio::cancellation_type::terminal);
  ASSERT_TRUE(run_until(io_, spawned));
  EXPECT_TRUE(spawned.error);
  // The read loop kills the jail when its pidfd comes and drops its end.
  EXPECT_TRUE(eventually([&] {
    io_.run_for(10ms);
    return processes_with(marker()).empty();
  }));
  expect_true_runs();
}

int open_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST_F(SpawnerTest, NoFdLeaksIntoTheJailOrStaysInTheServer) {
  const int before = open_fds();
  // The launcher's own status and watch fds are gone by exec; only stdio.
  EXPECT_EQ(fds_in_a_jail(), "fd=0\nfd=1\nfd=2\n");
  for (int i = 0; i < 5; ++i) expect_true_runs();
  // Every pidfd that came with a STARTED was closed with its RunningJail.
  EXPECT_EQ(open_fds(), before);
}

// The namespaces the spawner holds through a burst of calls
// (namespace_holds.h) reach no jail built meanwhile, and are let go once it
// is idle. The holds wait unread in a socket pair of brig-spawner's own: of
// its sockets, the one whose sends its peer has not read (SIOCOUTQ, through
// a copy: pidfd_getfd, root only). A jail built ahead keeps its own hold
// unread in its socket until its command comes, but from the other side.
TEST_F(SpawnerTest, NamespacesHeldThroughABurstReachNoJailAndAreLetGoWhenIdle) {
  auto holds = [this]() -> std::optional<int> {
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, spawner_pid_, 0)));
    if (!pidfd) return std::nullopt;
    int n = 0;
    const std::string dir = "/proc/" + std::to_string(spawner_pid_) + "/fd";
    std::error_code denied;
    std::filesystem::directory_iterator fds(dir, denied);
    if (denied) return std::nullopt;
    for (const auto& e : fds) {
      std::error_code ec;
      if (!std::filesystem::read_symlink(e.path(), ec).string().starts_with("socket:[")) continue;
      const int target = std::stoi(e.path().filename().string());
      UniqueFd copy(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), target, 0)));
      int unread = 0;
      if (copy && ::ioctl(copy.get(), SIOCOUTQ, &unread) == 0) n += unread;
    }
    return n;
  };
  for (int i = 0; i < 12; ++i) expect_true_runs();
  EXPECT_EQ(fds_in_a_jail(), "fd=0\nfd=1\nfd=2\n");
  // brig-spawner is dumpable only while it clones a jail (dumpable_spawn.h):
  // only root may list its fds at any time.
  if (::geteuid() != 0) return;
  // Mid-burst they are there: what the idle check below would miss if
  // nothing were ever held (or the count were read wrong). A few tries: a
  // loaded machine may idle the spawner 20 ms between two calls.
  bool held = false;
  for (int burst = 0; burst < 5 && !held; ++burst) {
    for (int i = 0; i < 4; ++i) expect_true_runs();
    held = holds().value_or(0) > 0;
  }
  EXPECT_TRUE(held) << "nothing held in a burst";
  EXPECT_TRUE(eventually([&] { return holds() == 0; }))
      << holds().value_or(-1) << " bytes of holds still queued by an idle brig-spawner";
}

TEST(SpawnerStartTest, AMissingProgramIsAnError) {
  asio::io_context io;
  auto s = Spawner::start(io.get_executor(), bin_dir() + "/no-such-brig-spawner");
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().to_string(), HasSubstr("no-such-brig-spawner"));
  EXPECT_EQ(s.error().sys_errno, ENOENT);
}

TEST(SpawnerStartTest, FindsTheProgramNextToThisOne) {
  auto path = Spawner::find_program();
  ASSERT_TRUE(path) << path.error().to_string();
  EXPECT_EQ(*path, bin_dir() + "/brig-spawner");
}

TEST_F(SpawnerTest, SpawnerHasNoEnvironmentAndIsNotDumpable) {
  ASSERT_NE(::getenv("PATH"), nullptr) << "the test needs an environment the spawner could leak";
  const std::string proc = "/proc/" + std::to_string(spawner_pid_);
  // A round trip first: /proc reads of a process still starting up (ASan
  // mapping its shadow) can come back empty.
  ASSERT_GT(jail_built_ahead(), 0);
  std::ifstream cmdline(proc + "/cmdline");
  std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  EXPECT_EQ(args, bin_dir() + "/brig-spawner" + '\0' + std::to_string(::getpid()) + '\0');
  if (::geteuid() != 0) {
    // Non-dumpable: another process of the same user may not read it. Not
    // while it clones a jail (spawner_loop.cc says why), as it may still be
    // doing for the one built ahead: once that is done.
    EXPECT_TRUE(eventually([&] {
      const int fd = ::open((proc + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return errno == EACCES;
      ::close(fd);
      return false;
    })) << "the spawner stays dumpable";
    return;
  }
  const int fd = ::open((proc + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  EXPECT_EQ(n, 0) << std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

// ---- the jail built ahead for the next spawn (server/spawner/jail_pool.h)

TEST_F(SpawnerTest, TheNextSpawnTakesTheJailBuiltAheadAndGetsItsOwnCommand) {
  const pid_t ahead = jail_built_ahead();
  ASSERT_GT(ahead, 0) << "no jail was built ahead";
  Pipe out;
  jail::ExecRequest r = sh("echo \"$0 $1 $PWD $ONLY\"; exit 5", {"zero", "one"});
  r.env.push_back("ONLY=this");
  r.cwd = workspace_.path();
  r.stdout_fd = out.write.get();
  auto running = spawn(r);
  ASSERT_TRUE(running) << running.error().to_string();
  out.write.reset();
  EXPECT_EQ(running->pid(), ahead);
  auto outcome = wait(*running);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->exit_code, 5) << outcome->to_string();
  EXPECT_EQ(read_until(out.read.get()), "zero one " + workspace_.path() + " this\n");
}

TEST_F(SpawnerTest, AJailBuiltAheadServesOnlyTheSpecItWasBuiltFor) {
  const pid_t ahead = jail_built_ahead();
  ASSERT_GT(ahead, 0);
  jail::JailSpec other = spec_;
  other.hostname = "brig-other";
  Pipe out;
  jail::ExecRequest r = sh("cat /proc/sys/kernel/hostname");
  r.stdout_fd = out.write.get();
  auto running = spawn(other, r);
  ASSERT_TRUE(running) << running.error().to_string();
  out.write.reset();
  EXPECT_NE(running->pid(), ahead);
  ASSERT_TRUE(wait(*running));
  EXPECT_EQ(read_until(out.read.get()), "brig-other\n");
  EXPECT_TRUE(eventually([&] { return process_gone(ahead); })) << "the other spec's jail stayed";
}

TEST_F(SpawnerTest, AJailBuiltAheadCountsItsWallTimeFromTheCommand) {
  const pid_t ahead = jail_built_ahead();
  ASSERT_GT(ahead, 0);
  std::this_thread::sleep_for(400ms);  // longer than the wall time below
  jail::JailSpec s = spec_;
  s.limits.wall_time = 300ms;  // an exec's timeout: the same jail serves it
  auto quick = spawn(s, sh("sleep 0.05; exit 7"));
  ASSERT_TRUE(quick) << quick.error().to_string();
  EXPECT_EQ(quick->pid(), ahead);
  auto o = wait(*quick);
  ASSERT_TRUE(o) << o.error().to_string();
  EXPECT_EQ(o->kind, Outcome::Kind::exited) << o->to_string();
  EXPECT_EQ(o->exit_code, 7);

  auto slow = spawn(s, sh("sleep 1000; exit 0", {marker()}));
  ASSERT_TRUE(slow) << slow.error().to_string();
  auto timed_out = wait(*slow);
  ASSERT_TRUE(timed_out) << timed_out.error().to_string();
  EXPECT_EQ(timed_out->kind, Outcome::Kind::timed_out) << timed_out->to_string();
}

TEST_F(SpawnerTest, AJailBuiltAheadThatDiedIsNotUsed) {
  const pid_t ahead = jail_built_ahead();
  ASSERT_GT(ahead, 0);
  ASSERT_EQ(::kill(ahead, SIGKILL), 0);
  ASSERT_TRUE(eventually([&] { return process_gone(ahead); }));
  jail::ExecRequest t;
  t.argv = {"/bin/true"};
  auto running = spawn(t);
  ASSERT_TRUE(running) << running.error().to_string();
  EXPECT_NE(running->pid(), ahead);
  auto o = wait(*running);
  ASSERT_TRUE(o) << o.error().to_string();
  EXPECT_EQ(o->exit_status(), 0) << o->to_string();
}

TEST_F(SpawnerTest, AJailBuiltAheadIsNotUsedOnceItsWorkspaceWasReplaced) {
  const pid_t ahead = jail_built_ahead();
  ASSERT_GT(ahead, 0);
  // The workspace deleted and made again (moved away here, to restore it).
  const std::string ws = workspace_.path();
  const std::string moved = ws + ".moved";
  ASSERT_EQ(::rename(ws.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  { std::ofstream(ws + "/made-after") << "x"; }
  EXPECT_EQ(output_instead_of(ahead, sh("ls \"$0\"", {ws})), "made-after\n");
  ::unlink((ws + "/made-after").c_str());
  ASSERT_EQ(::rmdir(ws.c_str()), 0);
  ASSERT_EQ(::rename(moved.c_str(), ws.c_str()), 0);
}

// A file written where the policy hides one, after the jail was built
// ahead: its plan skipped the mask (nothing was there), so it would show the
// file. Its planner's question (an lstat) asked again before use answers
// otherwise, and a fresh jail, which masks it, serves instead.
TEST_F(SpawnerTest, AJailBuiltAheadIsNotUsedOnceAPathItsPlanAskedAboutChanged) {
  const std::string secret = workspace_.path() + "/secret";
  jail::Mount mask;
  mask.kind = jail::Mount::Kind::mask;
  mask.target = secret;
  spec_.mounts.push_back(mask);
  const pid_t ahead = jail_built_ahead();
  ASSERT_GT(ahead, 0);
  { std::ofstream(secret) << "token"; }
  EXPECT_EQ(output_instead_of(ahead, sh("cat \"$0\"", {secret})), "");
  ::unlink(secret.c_str());
}

// The jail built ahead after a call that found its jail unchanged takes that
// jail's plan instead of planning again (jail::VerifiedPlan). A hidden file
// written afterwards is still found before use, and the pool plans again
// instead of building from the old plan forever: the next jail built ahead
// masks the file and serves the next call.
TEST_F(SpawnerTest, AJailBuiltFromTheLastUnchangedPlanIsCheckedLikeAnyOther) {
  const std::string secret = workspace_.path() + "/secret";
  jail::Mount mask;
  mask.kind = jail::Mount::Kind::mask;
  mask.target = secret;
  spec_.mounts.push_back(mask);
  ASSERT_GT(jail_built_ahead(), 0);
  const pid_t from_plan = jail_built_ahead();  // its call took the first one, found unchanged
  ASSERT_GT(from_plan, 0);
  { std::ofstream(secret) << "token"; }
  EXPECT_EQ(output_instead_of(from_plan, sh("cat \"$0\"", {secret})), "");

  ASSERT_GT(jail_built_ahead(), 0);
  const std::set<pid_t> before = spawner_children();
  Pipe out;
  jail::ExecRequest r = sh("cat \"$0\"", {secret});
  r.stdout_fd = out.write.get();
  auto running = spawn(r);
  ASSERT_TRUE(running) << running.error().to_string();
  out.write.reset();
  EXPECT_TRUE(before.contains(running->pid()))
      << "no jail built ahead served: still built from the old plan and dropped";
  auto o = wait(*running);
  ASSERT_TRUE(o) << o.error().to_string();
  EXPECT_EQ(read_until(out.read.get()), "");
  ::unlink(secret.c_str());
}

// Issue 16: calls back to back grow the pool (server/spawner/jail_pool.h):
// after a burst, more than one jail waits, and the next burst is served by
// them, each jail used once.
TEST_F(SpawnerTest, ABurstIsServedByJailsBuiltAheadEachUsedOnce) {
  const auto waiting = [&] {
    std::size_t n = 0;
    for (pid_t p : spawner_children()) n += is_jail_init(p) ? 1 : 0;
    return n;
  };
  std::set<pid_t> used;
  const auto burst = [&](int calls, int* pooled) {
    for (int i = 0; i < calls; ++i)
      if (run_once(used) && pooled) ++*pooled;
  };
  burst(8, nullptr);
  ASSERT_TRUE(eventually([&] { return waiting() >= 2; }))
      << "after a burst, still at most one jail built ahead";
  EXPECT_LE(waiting(), kMaxAhead);
  int pooled = 0;
  burst(8, &pooled);
  RecordProperty("pooled_of_8", pooled);
  EXPECT_GE(pooled, 2) << "only the first call of the burst found a jail built ahead";
  EXPECT_TRUE(eventually([&] { return waiting() <= kMaxAhead; }));
}

// Within one burst too: once calls come back to back, the spawner builds
// the next jail at once, without waiting to be idle (which a burst never
// is), so the burst's later calls find jails built ahead (or wait for the
// one being built) instead of each building its own.
TEST_F(SpawnerTest, ALongBurstKeepsFindingJailsBuiltAhead) {
  std::set<pid_t> used;
  int pooled = 0;
  constexpr int kCalls = 16;
  for (int i = 0; i < kCalls; ++i)
    if (run_once(used) && i >= 2) ++pooled;
  RecordProperty("pooled_of_14", pooled);
  EXPECT_GE(pooled, 7) << "the burst's calls built their own jails";
}

// While the spawner builds a jail ahead, SPAWNs that come are served from
// the pool when it has a jail for them, and wait for the build otherwise
// (in order); every end is reported, and no jail serves twice. Several
// calls in flight at once, after a burst grew the pool, so builds and
// SPAWNs overlap.
TEST_F(SpawnerTest, SpawnsDuringABuildAreServedOnceEachAndInOrder) {
  std::set<pid_t> used;
  for (int round = 0; round < 4; ++round) {
    constexpr int kCalls = 3;
    std::vector<Completion<Result<RunningJail>>> spawned(kCalls);
    for (int i = 0; i < kCalls; ++i) start_op(io_, spawner_->spawn(spec_, kOnce), spawned[i]);
    std::vector<RunningJail> running;
    for (auto& s : spawned) {
      ASSERT_TRUE(run_until(io_, s));
      ASSERT_FALSE(s.error);
      ASSERT_TRUE(*s.value) << s.value->error().to_string();
      EXPECT_TRUE(used.insert((*s.value)->pid()).second) << "pid " << (*s.value)->pid() << " twice";
      running.push_back(std::move(**s.value));
    }
    for (RunningJail& r : running) {
      auto o = wait(r);
      ASSERT_TRUE(o) << o.error().to_string();
      EXPECT_EQ(o->exit_status(), 0) << o->to_string();
    }
  }
}

TEST_F(SpawnerTest, WithoutThePoolNoJailWaits) {
  spawner_.reset();
  io_.poll();
  auto s = Spawner::start(io_.get_executor(), bin_dir() + "/brig-spawner", /*jail_pool=*/false);
  ASSERT_TRUE(s) << s.error().to_string();
  spawner_ = std::move(*s);
  spawner_pid_ = spawner_->pid();
  jail::ExecRequest t;
  t.argv = {"/bin/true"};
  for (int i = 0; i < 2; ++i) {
    auto running = spawn(t);
    ASSERT_TRUE(running) << running.error().to_string();
    auto o = wait(*running);
    ASSERT_TRUE(o) << o.error().to_string();
    EXPECT_EQ(o->exit_status(), 0);
  }
  // Well past the spawner's idle delay: no jail is built ahead.
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(eventually([&] { return children_of(spawner_pid_).empty(); }));
  // The jails' cgroups, removed after each end was reported, went with them
  // while the spawner lives.
  EXPECT_TRUE(eventually([&] { return jail::test::our_cgroups(spawner_pid_).empty(); }));
}

}  // namespace
}  // namespace brig::spawner
