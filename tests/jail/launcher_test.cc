// The launcher end to end: jail_probe runs inside a jail and reports what it
// sees. Runs as root and as an unprivileged user (scripts/test.sh).
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "jail/launcher.h"
#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class LauncherTest : public JailTest {
 protected:
  JailSpec spec() const { return base_spec(workspace_.path()); }
  // The same jail without Landlock, for tests of what the mounts alone do.
  JailSpec mounts_only() const {
    JailSpec s = spec();
    s.landlock.enabled = false;
    s.required = {Layer::namespaces, Layer::seccomp};
    return s;
  }
  void write_host_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
  }
};

TEST_F(LauncherTest, TrueExitsZeroFoundThroughTheJailsPath) {
  ExecRequest r;
  r.argv = {"true"};
  r.env = {"PATH=/nonexistent:/usr/bin:/bin"};
  const Ran ran = run_jail(spec(), r);
  EXPECT_EQ(ran.outcome.kind, Outcome::Kind::exited) << ran.outcome.to_string();
  EXPECT_EQ(ran.outcome.exit_status(), 0);
}

TEST_F(LauncherTest, ExitCodesAndSignals) {
  const Ran three = run_jail(spec(), probe_request({"exit", "3"}));
  EXPECT_EQ(three.outcome.kind, Outcome::Kind::exited);
  EXPECT_EQ(three.outcome.exit_code, 3);
  EXPECT_EQ(three.outcome.exit_status(), 3);
  EXPECT_GT(three.outcome.duration.count(), 0);
  EXPECT_GT(three.outcome.rusage.ru_maxrss, 0);  // the whole jail's, reaped by the init

  const Ran killed = run_jail(spec(), probe_request({"kill", "9"}));
  EXPECT_EQ(killed.outcome.kind, Outcome::Kind::signaled) << killed.outcome.to_string();
  EXPECT_EQ(killed.outcome.signal, SIGKILL);
  EXPECT_EQ(killed.outcome.exit_status(), 128 + 9);
}

TEST_F(LauncherTest, ConfinedProcessState) {
  const Ran ran = run_jail(spec(), probe_request({"status"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("NoNewPrivs:\t1"));
  EXPECT_THAT(l, Contains("Seccomp:\t2"));
  EXPECT_THAT(l, Contains("CapEff:\t0000000000000000"));
  EXPECT_THAT(l, Contains("CapPrm:\t0000000000000000"));
  EXPECT_THAT(l, Contains("CapBnd:\t0000000000000000"));
  EXPECT_THAT(l, Contains("uid=" + std::to_string(::getuid())));
  EXPECT_THAT(l, Contains("gid=" + std::to_string(::getgid())));
  EXPECT_THAT(l, Contains("hostname=brig-test"));
  // The probe is the init's only child, the jail's pid 2; pid 1 is the init
  // (a clone of this test binary, not the probe).
  EXPECT_THAT(l, Contains("pid=2"));
  EXPECT_THAT(l, ::testing::Not(Contains("pid1=jail_probe")));
  for (const auto& layer : ran.outcome.layers.layers) {
    if (layer.layer == Layer::cgroups) continue;
    EXPECT_EQ(layer.state, LayerState::enforced) << layer_name(layer.layer) << ": " << layer.detail;
  }
}

TEST_F(LauncherTest, OnlyRootCanRunTheJailAsAnotherHostUser) {
  JailSpec s = mounts_only();
  s.identity = {1000, 1000, 65534, 65534};  // nobody:nogroup on the host
  if (::getuid() != 0) {
    // Unprivileged, the kernel lets brig map only its own ids.
    auto j = spawn(s, probe_request({"status"}));
    ASSERT_FALSE(j);
    EXPECT_EQ(j.error().step, SetupStep::uid_map);
    EXPECT_EQ(j.error().sys_errno, EPERM);
    return;
  }
  const Ran ran = run_jail(s, probe_request({"status"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  const auto l = lines(ran.out);
  EXPECT_THAT(l, Contains("uid=1000"));
  EXPECT_THAT(l, Contains("gid=1000"));
  EXPECT_THAT(l, Contains("Groups:\t "));  // none: root's supplementary groups are gone
  EXPECT_THAT(l, Contains("CapEff:\t0000000000000000"));
  // The workspace belongs to root: an unprivileged host uid may not write it.
  const Ran write = run_jail(s, probe_request({"write", workspace_.path() + "/f"}));
  EXPECT_THAT(write.out, HasSubstr("err=EACCES"));
}

TEST_F(LauncherTest, EnvironmentIsExactlyTheRequests) {
  ::setenv("BRIG_TEST_HOST_SECRET", "leak", 1);
  ExecRequest r = probe_request({"env"});
  r.env = {"PATH=/usr/bin:/bin", "ONLY=this", "EMPTY="};
  const Ran ran = run_jail(spec(), r);
  ::unsetenv("BRIG_TEST_HOST_SECRET");
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string();
  EXPECT_THAT(lines(ran.out), ElementsAre("PATH=/usr/bin:/bin", "ONLY=this", "EMPTY="));
}

TEST_F(LauncherTest, OnlyStdioIsInherited) {
  // Neither CLOEXEC nor low-numbered: spawn must still close them.
  const int leaked = ::open("/dev/null", O_RDONLY);
  const int high = ::fcntl(leaked, F_DUPFD, 100);
  ASSERT_GE(leaked, 0);
  const Ran ran = run_jail(spec(), probe_request({"fds"}));
  ::close(leaked);
  ::close(high);
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string();
  EXPECT_THAT(lines(ran.out), ElementsAre("fd=0", "fd=1", "fd=2"));
}

TEST_F(LauncherTest, ReadOnlyBindRefusesWritesByMountAlone) {
  const Ran ran = run_jail(mounts_only(), probe_request({"write", "/etc/brig-probe"}));
  EXPECT_EQ(ran.outcome.exit_code, 1);
  EXPECT_THAT(ran.out, HasSubstr("err=EROFS"));
}

TEST_F(LauncherTest, ReadWriteBindWritesThroughToTheHost) {
  const std::string file = workspace_.path() + "/written";
  const Ran ran = run_jail(spec(), probe_request({"write", file}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.out << ran.outcome.to_string();
  std::ifstream in(file);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "probe");
}

TEST_F(LauncherTest, UnboundHostPathIsAbsentAndTmpIsPrivate) {
  // The workspace is under the host's /tmp; its sibling is not bound.
  TempDir sibling;
  write_host_file(sibling.path() + "/secret", "host secret\n");
  const Ran ran = run_jail(spec(), probe_request({"read", sibling.path() + "/secret"}));
  EXPECT_THAT(ran.out, HasSubstr("err=ENOENT"));
  const Ran tmp = run_jail(spec(), probe_request({"ls", "/tmp"}));
  ASSERT_EQ(tmp.outcome.exit_status(), 0) << tmp.out;
  // Only the mount points brig made for the binds below /tmp.
  std::set<std::string> expected;
  for (const std::string& p : {bin_dir(), workspace_.path()})
    if (p.starts_with("/tmp/")) expected.insert(p.substr(5, p.find('/', 5) - 5));
  const auto got = lines(tmp.out);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected);
}

TEST_F(LauncherTest, MaskedPathsAreEmpty) {
  ::mkdir((workspace_.path() + "/secret-dir").c_str(), 0755);
  write_host_file(workspace_.path() + "/secret-dir/key", "k\n");
  write_host_file(workspace_.path() + "/secret-file", "s\n");
  JailSpec s = spec();
  for (const char* p : {"/secret-dir", "/secret-file", "/not-there"}) {
    Mount m;
    m.kind = Mount::Kind::mask;
    m.target = workspace_.path() + p;
    s.mounts.push_back(m);
  }
  const Ran dir = run_jail(s, probe_request({"ls", workspace_.path() + "/secret-dir"}));
  EXPECT_EQ(dir.outcome.exit_status(), 0) << dir.outcome.to_string();
  EXPECT_EQ(dir.out, "");
  const Ran file = run_jail(s, probe_request({"read", workspace_.path() + "/secret-file"}));
  EXPECT_EQ(file.out, "bytes=0\n");
}

TEST_F(LauncherTest, GitDirectoryBoundOntoItselfWithReadOnlyHooksAndConfig) {
  const std::string git = workspace_.path() + "/.git";
  ::mkdir(git.c_str(), 0755);
  ::mkdir((git + "/hooks").c_str(), 0755);
  write_host_file(git + "/config", "[core]\n");
  JailSpec s = mounts_only();
  auto bind = [&](const std::string& path, bool writable) {
    Mount m;
    m.source = m.target = path;
    m.writable = writable;
    s.mounts.push_back(m);
  };
  bind(git, true);
  bind(git + "/hooks", false);
  bind(git + "/config", false);
  EXPECT_THAT(run_jail(s, probe_request({"write", git + "/HEAD"})).out, HasSubstr("ok"));
  EXPECT_THAT(run_jail(s, probe_request({"write", git + "/hooks/pre-commit"})).out,
              HasSubstr("err=EROFS"));
  EXPECT_THAT(run_jail(s, probe_request({"write", git + "/config"})).out, HasSubstr("err=EROFS"));
  EXPECT_THAT(run_jail(s, probe_request({"write", workspace_.path() + "/file"})).out,
              HasSubstr("ok"));
}

TEST_F(LauncherTest, ProcShowsOnlyTheJail) {
  const Ran ran = run_jail(spec(), probe_request({"pids"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.out;
  EXPECT_THAT(lines(ran.out), ElementsAre("1", "2"));
}

TEST_F(LauncherTest, ProcSysIsNotWritable) {
  const Ran ran = run_jail(mounts_only(), probe_request({"write", "/proc/sys/kernel/hostname"}));
  EXPECT_EQ(ran.outcome.exit_code, 1) << ran.out;
  // Root-mapped jails get a read-only /proc/sys; others lack the permission.
  EXPECT_THAT(ran.out, ::testing::AnyOf(HasSubstr("err=EROFS"), HasSubstr("err=EACCES")));
  if (::getuid() == 0) {
    EXPECT_THAT(ran.out, HasSubstr("err=EROFS"));
    // Root can read the host's timer_list (0400 root) unless it is masked.
    ASSERT_EQ(::access("/proc/timer_list", R_OK), 0);
    EXPECT_EQ(run_jail(mounts_only(), probe_request({"read", "/proc/timer_list"})).out,
              "bytes=0\n");
  }
}

TEST_F(LauncherTest, NetworkIsLoopbackOnly) {
  const Ran ran = run_jail(spec(), probe_request({"ifaces"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.out;
  EXPECT_THAT(lines(ran.out), ElementsAre("lo up"));
}

// Serves one exchange on a listener from outside the jail: `reply` to
// whatever the jail sent. TCP: accept, read to EOF; UDP: one datagram.
std::string serve_once(int listener, bool tcp, const std::string& reply) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, 10'000) != 1) return "timeout";
  char buf[256];
  if (!tcp) {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    const ssize_t n =
        ::recvfrom(listener, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return "recvfrom failed";
    ::sendto(listener, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    return std::string(buf, static_cast<size_t>(n));
  }
  const int c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return "accept failed";
  std::string got;
  for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  ::write(c, reply.data(), reply.size());
  ::close(c);
  return got;
}

TEST_F(LauncherTest, ListenersOnTheJailsLoopbackAreServedFromOutside) {
  JailSpec s = spec();
  s.listeners = {{Listener::Protocol::tcp, 3128},
                 {Listener::Protocol::udp, 53},
                 {Listener::Protocol::tcp, 53}};
  for (const auto& [tcp, port] :
       {std::pair{true, 3128}, std::pair{false, 53}, std::pair{true, 53}}) {
    int out[2];
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    ExecRequest r = probe_request({tcp ? "talk-tcp" : "talk-udp", std::to_string(port), "ping"});
    r.stdout_fd = out[1];
    auto jailed = spawn(s, r);
    ::close(out[1]);
    ASSERT_TRUE(jailed) << jailed.error().to_string();
    std::vector<UniqueFd> listeners = jailed->take_listeners();
    ASSERT_EQ(listeners.size(), 3u);
    EXPECT_TRUE(jailed->take_listeners().empty());  // handed over once
    const int index = port == 3128 ? 0 : (tcp ? 2 : 1);
    EXPECT_EQ(serve_once(listeners[index].get(), tcp, "pong"), "ping");
    const Ran ran = wait_and_collect(*jailed, out[0], -1);
    EXPECT_EQ(ran.outcome.exit_status(), 0) << ran.out << ran.outcome.to_string();
    EXPECT_EQ(ran.out, "reply=pong\n") << port;
  }
}

TEST_F(LauncherTest, ListenersAreOnTheJailsLoopbackNotTheHosts) {
  JailSpec s = spec();
  s.listeners = {{Listener::Protocol::tcp, 3128}};
  auto jailed = spawn(s, probe_request({"sleep", "5"}));
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  std::vector<UniqueFd> listeners = jailed->take_listeners();
  ASSERT_EQ(listeners.size(), 1u);
  sockaddr_in at{};
  socklen_t len = sizeof at;
  ASSERT_EQ(::getsockname(listeners[0].get(), reinterpret_cast<sockaddr*>(&at), &len), 0);
  EXPECT_EQ(ntohl(at.sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_EQ(ntohs(at.sin_port), 3128);
  // A host process connecting to 127.0.0.1:3128 never reaches the jail's
  // listener (it is refused, or reaches whatever the host runs there).
  const int host = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ::connect(host, reinterpret_cast<const sockaddr*>(&at), sizeof at);
  pollfd p{listeners[0].get(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 200), 0);
  ::close(host);
  jailed->signal(SIGKILL);
}

TEST_F(LauncherTest, ListenersNeedTheJailsOwnNetwork) {
  JailSpec s = spec();
  s.namespaces.net = false;
  s.network = NetworkMode::dangerously_host;
  s.listeners = {{Listener::Protocol::tcp, 3128}};
  auto jailed = spawn(s, probe_request({"exit", "0"}));
  ASSERT_FALSE(jailed);
  EXPECT_EQ(jailed.error().step, SetupStep::validate);
  EXPECT_THAT(jailed.error().to_string(), HasSubstr("network namespace"));
}

TEST_F(LauncherTest, FileMountCoversTheHostFileReadOnly) {
  JailSpec s = spec();
  Mount f;
  f.kind = Mount::Kind::file;
  f.target = "/etc/hostname";
  f.content = "nameserver 127.0.0.1\n";
  s.mounts.push_back(f);
  const Ran ran = run_jail(s, probe_request({"read", "/etc/hostname"}));
  EXPECT_EQ(ran.outcome.exit_status(), 0) << ran.out << ran.outcome.to_string();
  EXPECT_THAT(ran.out, HasSubstr("nameserver 127.0.0.1"));
  const Ran wrote = run_jail(s, probe_request({"write", "/etc/hostname"}));
  EXPECT_NE(wrote.outcome.exit_status(), 0) << wrote.out;
}

TEST_F(LauncherTest, FileMountWithNothingToCoverFailsTheMountStep) {
  JailSpec s = spec();
  Mount f;
  f.kind = Mount::Kind::file;
  f.target = "/etc/brig-no-such-file";
  f.content = "x";
  s.mounts.push_back(f);
  auto jailed = spawn(s, probe_request({"exit", "0"}));
  ASSERT_FALSE(jailed);
  EXPECT_THAT(jailed.error().to_string(), HasSubstr("no bind shows a regular file"));
}

TEST_F(LauncherTest, TimeoutKillsTheWholeJail) {
  JailSpec s = spec();
  s.limits.wall_time = std::chrono::milliseconds(300);
  const Ran ran = run_jail(s, probe_request({"fork-sleep", "1000", marker()}));
  EXPECT_EQ(ran.outcome.kind, Outcome::Kind::timed_out) << ran.outcome.to_string();
  EXPECT_EQ(ran.outcome.exit_status(), 124);
  // TearDown checks that no process with the marker (the probe or its
  // grandchild) is left.
}

TEST_F(LauncherTest, DroppingAJailedKillsIt) {
  {
    ExecRequest r = probe_request({"sleep", "1000", marker()});
    r.stdout_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    auto j = spawn(spec(), r);
    ::close(r.stdout_fd);
    ASSERT_TRUE(j) << j.error().to_string();
  }
}

TEST_F(LauncherTest, SigkillOfTheLauncherLeavesNothing) {
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    JailSpec s = spec();
    s.limits.pids = 64;  // a cgroup when there is one to make
    ExecRequest r = probe_request({"fork-sleep", "1000", marker()});
    auto j = spawn(s, r);
    if (!j) ::_exit(1);
    // Wait until the probe runs, so the jail is complete when killed.
    while (processes_with(marker()).size() < 2) ::usleep(1000);
    [[maybe_unused]] auto n = ::write(ready[1], "r", 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  EXPECT_FALSE(processes_with(marker()).empty());
  ::kill(launcher, SIGKILL);
  int st = 0;
  ASSERT_EQ(::waitpid(launcher, &st, 0), launcher);
  // The orphaned init is reparented to this test (a subreaper); it must
  // shut the jail down and exit on its own.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((::waitpid(-1, &st, WNOHANG) != -1 || !our_cgroups(launcher).empty()) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_THAT(our_cgroups(launcher), ::testing::IsEmpty());
  // TearDown checks that the jail's processes are gone.
}

TEST_F(LauncherTest, SignalsAreForwardedToTheCommand) {
  ExecRequest r = probe_request({"sleep", "1000", marker()});
  r.stdout_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  auto j = spawn(spec(), r);
  ::close(r.stdout_fd);
  ASSERT_TRUE(j) << j.error().to_string();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (processes_with(marker()).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(j->signal(SIGTERM), 0);
  auto o = wait(*j, deadline);
  ASSERT_TRUE(o) << o.error().to_string();
  EXPECT_EQ(o->kind, Outcome::Kind::signaled) << o->to_string();
  EXPECT_EQ(o->signal, SIGTERM);
}

TEST_F(LauncherTest, MissingBindSourceIsASetupFailure) {
  JailSpec s = spec();
  Mount m;
  m.source = m.target = "/nonexistent/brig-source";
  s.mounts.push_back(m);
  const Ran ran = run_jail(s, probe_request({"exit", "0"}));
  EXPECT_EQ(ran.outcome.kind, Outcome::Kind::setup_failed);
  EXPECT_EQ(ran.outcome.exit_status(), 125);
  EXPECT_EQ(ran.outcome.setup.step, SetupStep::mount);
  EXPECT_EQ(ran.outcome.setup.sys_errno, ENOENT);
  EXPECT_THAT(ran.outcome.setup.message, HasSubstr("/nonexistent/brig-source"));
}

TEST_F(LauncherTest, CommandNotFoundIs127AndNotExecutableIs126) {
  ExecRequest missing = probe_request({});
  missing.argv = {"brig-no-such-command"};
  const Ran ran = run_jail(spec(), missing);
  EXPECT_EQ(ran.outcome.setup.step, SetupStep::exec) << ran.outcome.to_string();
  EXPECT_EQ(ran.outcome.exit_status(), 127);

  const std::string script = workspace_.path() + "/not-executable";
  write_host_file(script, "#!/bin/sh\n", 0644);
  ExecRequest denied = probe_request({});
  denied.argv = {script};
  const Ran ran2 = run_jail(spec(), denied);
  EXPECT_EQ(ran2.outcome.setup.step, SetupStep::exec) << ran2.outcome.to_string();
  EXPECT_EQ(ran2.outcome.setup.sys_errno, EACCES);
  EXPECT_EQ(ran2.outcome.exit_status(), 126);
}

TEST_F(LauncherTest, LimitsTierIsReported) {
  JailSpec s = spec();
  s.limits.pids = 64;
  s.limits.memory_bytes = 256ull << 20;
  const Ran ran = run_jail(s, probe_request({"read", "/proc/self/limits"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string();
  const LayerStatus* cg = ran.outcome.layers.find(Layer::cgroups);
  ASSERT_NE(cg, nullptr);
  if (ran.outcome.layers.limits_tier == LimitsTier::rlimits) {
    EXPECT_EQ(cg->state, LayerState::degraded);
    EXPECT_THAT(ran.out, ::testing::ContainsRegex("Max processes +65 +65"));
  } else {
    EXPECT_EQ(cg->state, LayerState::enforced) << cg->detail;
  }
  if (::getuid() == 0) {
    // This project's machines: v1 pids and memory controllers, root.
    EXPECT_EQ(ran.outcome.layers.limits_tier, LimitsTier::cgroup_v1) << cg->detail;
  }
}

// Runs `body` in a child process in a new user namespace that may create no
// further user namespace (user.max_user_namespaces is per namespace): a host
// where they are refused, as AppArmor or a container can do. Returns the
// child's exit status; 100+ means the setup itself failed.
int in_userns_without_nesting(const std::function<int()>& body) {
  const pid_t p = ::fork();
  if (p == 0) {
    const std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
    auto put = [](const char* path, const std::string& text) {
      std::ofstream f(path);
      f << text;
      f.close();
      return !f.fail();
    };
    if (::unshare(CLONE_NEWUSER) != 0) ::_exit(100);
    if (!put("/proc/self/setgroups", "deny") ||
        !put("/proc/self/uid_map", uid + " " + uid + " 1") ||
        !put("/proc/self/gid_map", gid + " " + gid + " 1"))
      ::_exit(101);
    if (!put("/proc/sys/user/max_user_namespaces", "0")) ::_exit(102);
    ::_exit(body());
  }
  int st = 0;
  ::waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST_F(LauncherTest, WithoutUserNamespacesRequiredOnesRefuse) {
  const int code = in_userns_without_nesting([&] {
    auto j = spawn(spec(), probe_request({"exit", "0"}));
    if (j) return 1;
    return j.error().step == SetupStep::clone3 &&
                   j.error().why.find("user namespaces") != std::string::npos
               ? 0
               : 2;
  });
  EXPECT_EQ(code, 0);
}

TEST_F(LauncherTest, WithoutUserNamespacesLandlockAndSeccompStillConfine) {
  const std::string m = marker();
  const int code = in_userns_without_nesting([&] {
    JailSpec s = spec();
    s.required = {Layer::landlock, Layer::seccomp};
    const Ran ran = run_jail(s, probe_request({"status"}));
    if (ran.outcome.exit_status() != 0) return 1;
    const LayerStatus* ns = ran.outcome.layers.find(Layer::namespaces);
    if (!ns || ns->state != LayerState::degraded) return 2;
    const auto l = lines(ran.out);
    auto has = [&](const std::string& x) { return std::find(l.begin(), l.end(), x) != l.end(); };
    if (!has("NoNewPrivs:\t1") || !has("Seccomp:\t2") || !has("CapEff:\t0000000000000000"))
      return 3;
    if (has("pid=2")) return 4;  // no pid namespace in this tier
    // Landlock alone keeps the unlisted parts of the host out.
    if (run_jail(s, probe_request({"read", "/root/.profile"})).out.find("err=EACCES") ==
            std::string::npos &&
        ::access("/root/.profile", F_OK) == 0)
      return 5;
    // The timeout still ends the command, through the init.
    s.limits.wall_time = std::chrono::milliseconds(300);
    const Ran slow = run_jail(s, probe_request({"sleep", "1000", m}));
    if (slow.outcome.kind != Outcome::Kind::timed_out) return 6;
    return 0;
  });
  EXPECT_EQ(code, 0);
}

TEST_F(LauncherTest, PidsLimitHoldsInEveryTier) {
  JailSpec s = spec();
  s.limits.pids = 8;
  const Ran ran = run_jail(s, probe_request({"forks", "32"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  // `pids` is the command's budget (the init is not counted): the probe and 7.
  EXPECT_EQ(ran.out, "forked=7 err=EAGAIN\n");
}

TEST_F(LauncherTest, MemoryLimitHoldsInEveryTier) {
  JailSpec s = spec();
  s.limits.memory_bytes = 64ull << 20;
  const Ran ran = run_jail(s, probe_request({"alloc", "512"}));
  // The cgroup's OOM killer (SIGKILL) or RLIMIT_DATA (malloc fails): either
  // way the probe never holds 512 MiB.
  EXPECT_NE(ran.outcome.exit_status(), 0) << ran.out;
  EXPECT_THAT(ran.out, ::testing::Not(HasSubstr("allocated=512")));
}

TEST_F(LauncherTest, RunMapsSpawnFailuresTo125) {
  JailSpec s = spec();
  s.mounts[0].target = "relative";
  const Outcome o = run(s, probe_request({"exit", "0"}));
  EXPECT_EQ(o.kind, Outcome::Kind::setup_failed);
  EXPECT_EQ(o.setup.step, SetupStep::validate);
  EXPECT_EQ(o.exit_status(), 125);
}

}  // namespace
}  // namespace brig::jail::test
