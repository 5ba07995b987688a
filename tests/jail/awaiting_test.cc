// Jails built ahead of their command (spawn_awaiting + start_command): the
// command gets exactly what a fresh jail's gets, confinement included, once.
// Runs as root and as an unprivileged user (scripts/test.sh).
#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>
#include <string>
#include <thread>

#include "jail/launcher.h"
#include "jail/steps/cgroups.h"
#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class AwaitingTest : public JailTest {
 protected:
  JailSpec spec() const { return base_spec(workspace_.path()); }

  // Builds a jail ahead, lets it wait `idle`, then runs `request` in it.
  Ran run_awaiting(ExecRequest request, std::chrono::milliseconds idle = 0ms,
                   std::optional<std::chrono::milliseconds> wall_time = std::nullopt) {
    return run_awaiting_in(spec(), std::move(request), idle, wall_time);
  }
  Ran run_awaiting_in(const JailSpec& s, ExecRequest request, std::chrono::milliseconds idle = 0ms,
                      std::optional<std::chrono::milliseconds> wall_time = std::nullopt) {
    auto jailed = spawn_awaiting(s);
    Ran ran;
    if (!jailed) {
      ADD_FAILURE() << "spawn_awaiting: " << jailed.error().to_string();
      return ran;
    }
    EXPECT_TRUE(jailed->awaiting());
    std::this_thread::sleep_for(idle);
    UniqueFd out(::memfd_create("jail-stdout", MFD_CLOEXEC));
    UniqueFd err(::memfd_create("jail-stderr", MFD_CLOEXEC));
    request.stdout_fd = out.get();
    request.stderr_fd = err.get();
    if (auto started = start_command(*jailed, request, wall_time); !started) {
      ADD_FAILURE() << "start_command: " << started.error().to_string();
      return ran;
    }
    EXPECT_FALSE(jailed->awaiting());
    return wait_and_collect(*jailed, out.get(), err.get());
  }

  // `r` in a fresh jail and in one built ahead from `s` end alike: the same
  // kind of end, exit code and output.
  void expect_like_fresh(const JailSpec& s, const ExecRequest& r, const std::string& what) {
    const Ran fresh = run_jail(s, r);
    const Ran built = run_awaiting_in(s, r);
    EXPECT_EQ(fresh.outcome.kind, built.outcome.kind) << what << ": " << built.outcome.to_string();
    EXPECT_EQ(fresh.outcome.exit_code, built.outcome.exit_code) << what;
    EXPECT_EQ(fresh.out, built.out) << what;
  }

  // A jail built ahead from `s`, once /proc/PID/mountinfo shows a mount at
  // `path`: the child makes its mounts after spawn_awaiting returns, and a
  // host change made before that would be built in.
  std::optional<RunningJail> built_ahead_with_mount_at(const JailSpec& s, const std::string& path) {
    auto jailed = spawn_awaiting(s);
    if (!jailed) {
      ADD_FAILURE() << "spawn_awaiting: " << jailed.error().to_string();
      return std::nullopt;
    }
    const std::string mountinfo = "/proc/" + std::to_string(jailed->pid()) + "/mountinfo";
    const auto mounted = [&] {
      std::ifstream in(mountinfo);
      for (std::string line; std::getline(in, line);)
        if (line.find(" " + path + " ") != std::string::npos) return true;
      return false;
    };
    for (int i = 0; i < 500 && !mounted(); ++i) std::this_thread::sleep_for(10ms);
    if (!mounted()) {
      ADD_FAILURE() << "the jail never mounted " << path;
      return std::nullopt;
    }
    return std::move(*jailed);
  }

  // What `request` writes to stdout, run in `jailed` (which it uses up).
  static std::string output_in(RunningJail& jailed, ExecRequest request) {
    UniqueFd out(::memfd_create("jail-stdout", MFD_CLOEXEC));
    request.stdout_fd = out.get();
    if (auto started = start_command(jailed, request, std::nullopt); !started) {
      ADD_FAILURE() << "start_command: " << started.error().to_string();
      return "";
    }
    if (auto outcome = wait(jailed); !outcome) ADD_FAILURE() << outcome.error().to_string();
    return slurp(out.get());
  }

  // base_spec(ws) with `secret` hidden.
  static JailSpec hiding(const std::string& ws, const std::string& secret) {
    JailSpec s = base_spec(ws);
    Mount hide;
    hide.kind = Mount::Kind::mask;
    hide.target = secret;
    s.mounts.push_back(hide);
    return s;
  }
};

TEST_F(AwaitingTest, CommandGetsItsArgvEnvCwdAndStdio) {
  ExecRequest r = probe_request({"env"});
  r.env = {"PATH=/usr/bin:/bin", "ONLY=this", "EMPTY="};
  const Ran env = run_awaiting(r);
  ASSERT_EQ(env.outcome.exit_status(), 0) << env.outcome.to_string() << env.err;
  EXPECT_THAT(lines(env.out), ElementsAre("PATH=/usr/bin:/bin", "ONLY=this", "EMPTY="));

  const Ran three = run_awaiting(probe_request({"exit", "3"}));
  EXPECT_EQ(three.outcome.kind, Outcome::Kind::exited) << three.outcome.to_string();
  EXPECT_EQ(three.outcome.exit_code, 3);

  // Only the command's stdio, none of the fds the jail was built with.
  const Ran fds = run_awaiting(probe_request({"fds"}));
  ASSERT_EQ(fds.outcome.exit_status(), 0) << fds.outcome.to_string();
  EXPECT_THAT(lines(fds.out), ElementsAre("fd=0", "fd=1", "fd=2"));

  ExecRequest in_ws = probe_request({"write", "made-here"});
  in_ws.cwd = workspace_.path();
  const Ran wrote = run_awaiting(in_ws);
  EXPECT_EQ(wrote.outcome.exit_status(), 0) << wrote.outcome.to_string() << wrote.out;
  EXPECT_EQ(::access((workspace_.path() + "/made-here").c_str(), F_OK), 0);
}

TEST_F(AwaitingTest, ConfinedExactlyLikeAFreshJail) {
  const Ran fresh = run_jail(spec(), probe_request({"status"}));
  const Ran ahead = run_awaiting(probe_request({"status"}), 50ms);
  ASSERT_EQ(ahead.outcome.exit_status(), 0) << ahead.outcome.to_string() << ahead.err;
  for (const char* line : {"NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000",
                           "CapBnd:\t0000000000000000", "pid=2", "hostname=brig-test"})
    EXPECT_THAT(lines(ahead.out), ::testing::Contains(line));
  EXPECT_EQ(lines(ahead.out), lines(fresh.out));
  EXPECT_EQ(ahead.outcome.layers, fresh.outcome.layers) << ahead.outcome.layers.to_string();
  // Landlock and the mounts: outside the workspace nothing is writable.
  const Ran denied = run_awaiting(probe_request({"write", "/etc/brig-probe"}));
  EXPECT_EQ(denied.outcome.exit_code, 1);
  EXPECT_THAT(denied.out, HasSubstr("err="));
}

TEST_F(AwaitingTest, TimeCountsFromTheCommand) {
  // Idle longer than the wall time, then a command well within it.
  const Ran ran = run_awaiting(probe_request({"exit", "0"}), 400ms, 300ms);
  EXPECT_EQ(ran.outcome.kind, Outcome::Kind::exited) << ran.outcome.to_string();
  EXPECT_LT(ran.outcome.duration, 300ms);

  const Ran slow = run_awaiting(probe_request({"sleep", "10", marker()}), 0ms, 200ms);
  EXPECT_EQ(slow.outcome.kind, Outcome::Kind::timed_out) << slow.outcome.to_string();
}

TEST_F(AwaitingTest, OneCommandOnly) {
  auto jailed = spawn_awaiting(spec());
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  ExecRequest r = probe_request({"exit", "0"});
  ASSERT_TRUE(start_command(*jailed, r, std::nullopt));
  auto again = start_command(*jailed, r, std::nullopt);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().sys_errno, EALREADY);
  auto outcome = wait(*jailed);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->exit_status(), 0);
}

// SpawnOptions::wait_readable: the launcher hands its wait for the network
// helper (a jail with listeners has one) to the caller (the spawner reports
// other jails' ends meanwhile), once, with a pidfd that polls readable when
// the helper is done; the jail is the same jail, listeners and all.
TEST_F(AwaitingTest, LauncherWaitsForItsHelperThroughTheCaller) {
  if (!spec().namespaces.net) GTEST_SKIP() << "no network namespace in this tier";
  int calls = 0;
  SpawnOptions options;
  options.wait_readable = [&calls](int pidfd) {
    ++calls;
    pollfd p{pidfd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10'000), 1);
  };
  JailSpec s = spec();
  s.listeners = {{Listener::Protocol::tcp, 3128}};
  auto jailed = spawn_awaiting(s, options);
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(jailed->take_listeners().size(), 1u);
  ASSERT_TRUE(start_command(*jailed, probe_request({"exit", "5"}), std::nullopt));
  auto outcome = wait(*jailed);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->exit_status(), 5);
}

// Without listeners or rules the child makes its network namespace itself
// (no helper, so nothing for the caller to wait for): the same namespace as
// a fresh jail's, lo up and nothing else, not the host's.
TEST_F(AwaitingTest, ItsOwnNetworkNamespaceIsMadeByItsChild) {
  if (!spec().namespaces.net) GTEST_SKIP() << "no network namespace in this tier";
  int calls = 0;
  SpawnOptions options;
  options.wait_readable = [&calls](int) { ++calls; };
  {
    auto jailed = spawn_awaiting(spec(), options);
    ASSERT_TRUE(jailed) << jailed.error().to_string();
    EXPECT_EQ(calls, 0);
  }
  const Ran ran = run_awaiting(probe_request({"ifaces"}));
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.out << ran.outcome.to_string();
  EXPECT_THAT(lines(ran.out), ElementsAre("lo up"));

  // A listener on the host's loopback is not there (Landlock's TCP rule
  // off, so that only the namespace stands in the way).
  UniqueFd host(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof at;
  ASSERT_EQ(::bind(host.get(), reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(::listen(host.get(), 1), 0);
  ASSERT_EQ(::getsockname(host.get(), reinterpret_cast<sockaddr*>(&at), &len), 0);
  JailSpec open_tcp = spec();
  open_tcp.landlock.restrict_tcp = false;
  const Ran connect =
      run_awaiting_in(open_tcp, probe_request({"connect-tcp", std::to_string(ntohs(at.sin_port))}));
  EXPECT_EQ(connect.out, "connect=ECONNREFUSED\n") << connect.outcome.to_string();
}

// The socket and the mount namespace its child sends (RunningJail::
// take_namespace_hold) are the jail's own namespaces, and keep them after
// the jail's end.
TEST_F(AwaitingTest, ItsNamespacesAreHeldByTheFdsItsChildSent) {
  if (!spec().namespaces.net) GTEST_SKIP() << "no network namespace in this tier";
  auto jailed = spawn_awaiting(spec());
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  // The child sends them once lo is up, before it waits for the command
  // (~10 ms after spawn_awaiting here; a second for a loaded CI machine).
  std::this_thread::sleep_for(1s);
  UniqueFd out(::memfd_create("jail-stdout", MFD_CLOEXEC));
  UniqueFd err(::memfd_create("jail-stderr", MFD_CLOEXEC));
  ExecRequest r;
  r.argv = {"/bin/readlink", "/proc/self/ns/net", "/proc/self/ns/mnt"};
  r.stdout_fd = out.get();
  r.stderr_fd = err.get();
  ASSERT_TRUE(start_command(*jailed, r, std::nullopt));
  net::NamespaceHold hold = jailed->take_namespace_hold();
  ASSERT_TRUE(hold) << "nothing from a child that had a second to send it";
  ASSERT_TRUE(hold.mounts) << "no mount namespace from a jail with /proc";
  EXPECT_FALSE(jailed->take_namespace_hold()) << "handed out twice";
  const Ran ran = wait_and_collect(*jailed, out.get(), err.get());
  ASSERT_EQ(ran.outcome.exit_status(), 0) << ran.err << ran.outcome.to_string();

  // The namespaces the command ran in, still there with the jail gone.
  std::this_thread::sleep_for(100ms);
  UniqueFd net_ns(::ioctl(hold.network.get(), SIOCGSKNS));
  ASSERT_TRUE(net_ns) << "SIOCGSKNS: " << std::strerror(errno);
  struct stat held_net {};
  ASSERT_EQ(::fstat(net_ns.get(), &held_net), 0);
  struct stat held_mnt {};
  ASSERT_EQ(::fstat(hold.mounts.get(), &held_mnt), 0);
  EXPECT_EQ(ran.out, "net:[" + std::to_string(held_net.st_ino) + "]\nmnt:[" +
                         std::to_string(held_mnt.st_ino) + "]\n");
  EXPECT_EQ(::ioctl(hold.mounts.get(), NS_GET_NSTYPE), CLONE_NEWNS);
  struct stat own_net {
  }, own_mnt{};
  ASSERT_EQ(::stat("/proc/self/ns/net", &own_net), 0);
  ASSERT_EQ(::stat("/proc/self/ns/mnt", &own_mnt), 0);
  EXPECT_NE(held_net.st_ino, own_net.st_ino) << "the host's network namespace, not the jail's";
  EXPECT_NE(held_mnt.st_ino, own_mnt.st_ino) << "the host's mount namespace, not the jail's";
}

// A jail whose command came before its child sent the socket runs as any
// other, and simply has none to hold.
TEST_F(AwaitingTest, ACommandSentAtOnceRunsWhetherOrNotTheHoldCame) {
  ExecRequest r;
  r.argv = {"/bin/echo", "ran"};
  const Ran ran = run_awaiting(r);
  EXPECT_EQ(ran.outcome.exit_status(), 0) << ran.err << ran.outcome.to_string();
  EXPECT_EQ(ran.out, "ran\n");
}

TEST_F(AwaitingTest, InvalidOrOversizedRequestLeavesItAwaiting) {
  auto jailed = spawn_awaiting(spec());
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  EXPECT_FALSE(start_command(*jailed, ExecRequest{}, std::nullopt));  // no argv
  ExecRequest big = probe_request({"exit", "4"});
  big.env.push_back("BIG=" + std::string(200 * 1024, 'x'));
  auto refused = start_command(*jailed, big, std::nullopt);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().sys_errno, E2BIG);
  ASSERT_TRUE(jailed->awaiting());
  ASSERT_TRUE(start_command(*jailed, probe_request({"exit", "4"}), std::nullopt));
  auto outcome = wait(*jailed);
  ASSERT_TRUE(outcome) << outcome.error().to_string();
  EXPECT_EQ(outcome->exit_status(), 4);
}

TEST_F(AwaitingTest, DroppedUnusedItIsKilledAndItsCgroupsRemoved) {
  pid_t pid = -1;
  {
    auto jailed = spawn_awaiting(spec());
    ASSERT_TRUE(jailed) << jailed.error().to_string();
    pid = jailed->pid();
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  // Reaped by the drop: the pid is gone (JailTest's TearDown also checks
  // that no child and no cgroup of this process is left).
  EXPECT_NE(::kill(pid, 0), 0);
}

TEST_F(AwaitingTest, ACommandThatCannotRunIsReportedLikeInAFreshJail) {
  ExecRequest missing = probe_request({"exit", "0"});
  missing.argv = {"no-such-command-anywhere"};
  const Ran ran = run_awaiting(missing);
  EXPECT_EQ(ran.outcome.exit_status(), 127) << ran.outcome.to_string();
  EXPECT_THAT(ran.outcome.to_string(), HasSubstr("no-such-command-anywhere"));

  ExecRequest bad_cwd = probe_request({"exit", "0"});
  bad_cwd.cwd = "/no/such/dir";
  const Ran chdir = run_awaiting(bad_cwd);
  EXPECT_EQ(chdir.outcome.kind, Outcome::Kind::setup_failed) << chdir.outcome.to_string();
  EXPECT_THAT(chdir.outcome.to_string(), HasSubstr("/no/such/dir"));
}

// A jail built ahead bound the workspace as it was: once the directory is
// replaced by another at the same path, the jail no longer matches the host.
TEST_F(AwaitingTest, AReplacedBindSourceMeansItNoLongerMatchesTheHost) {
  TempDir parent;
  const std::string ws = parent.path() + "/ws";
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  const JailSpec s = base_spec(ws);
  auto jailed = built_ahead_with_mount_at(s, ws);
  ASSERT_TRUE(jailed);
  EXPECT_TRUE(built_from_current_host(*jailed, s));
  // Files inside a bound directory are live anyway: no change of identity.
  std::ofstream(ws + "/new-file") << "x";
  EXPECT_TRUE(built_from_current_host(*jailed, s));

  ASSERT_EQ(::rename(ws.c_str(), (parent.path() + "/old").c_str()), 0);
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  EXPECT_FALSE(built_from_current_host(*jailed, s));
  // The jail itself still sees the old directory, which is why a pool must
  // not hand it out.
  EXPECT_THAT(output_in(*jailed, probe_request({"ls", ws})), HasSubstr("new-file"));
  ASSERT_EQ(::rmdir(ws.c_str()), 0);
  ASSERT_EQ(::rename((parent.path() + "/old").c_str(), ws.c_str()), 0);
}

// Every question the jail's planner asked the host is asked again before
// use: a change in any answer (a .git made where there was none, a symlink
// retargeted, a hidden file written) means it no longer matches, though
// every bind source is still the same file; undone, it matches again. A
// spec other than the one it was built for is planned again.
TEST_F(AwaitingTest, AChangeInAnyAnswerItsPlanWasMadeFromMeansItNoLongerMatches) {
  TempDir parent;
  const std::string ws = parent.path() + "/ws";
  const std::string a = parent.path() + "/a";
  const std::string b = parent.path() + "/b";
  const std::string link = parent.path() + "/data";
  for (const std::string& d : {ws, a, b}) ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
  ASSERT_EQ(::symlink("a", link.c_str()), 0);
  JailSpec s = base_spec(ws);
  Mount data;
  data.kind = Mount::Kind::bind;
  data.source = link;
  data.target = "/data";
  s.mounts.push_back(data);
  Mount git;
  git.kind = Mount::Kind::git;
  git.target = ws + "/.git";
  s.mounts.push_back(git);
  Mount secret;
  secret.kind = Mount::Kind::mask;
  secret.target = ws + "/secret";
  s.mounts.push_back(secret);
  auto jailed = spawn_awaiting(s);
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  EXPECT_TRUE(built_from_current_host(*jailed, s));

  ASSERT_EQ(::mkdir((ws + "/.git").c_str(), 0755), 0);
  EXPECT_FALSE(built_from_current_host(*jailed, s)) << ".git made";
  ASSERT_EQ(::rmdir((ws + "/.git").c_str()), 0);
  EXPECT_TRUE(built_from_current_host(*jailed, s));

  ASSERT_EQ(::unlink(link.c_str()), 0);
  ASSERT_EQ(::symlink("b", link.c_str()), 0);
  EXPECT_FALSE(built_from_current_host(*jailed, s)) << "symlink retargeted";
  ASSERT_EQ(::unlink(link.c_str()), 0);
  ASSERT_EQ(::symlink("a", link.c_str()), 0);
  EXPECT_TRUE(built_from_current_host(*jailed, s));

  std::ofstream(ws + "/secret") << "token";
  EXPECT_FALSE(built_from_current_host(*jailed, s)) << "hidden file written";
  ASSERT_EQ(::unlink((ws + "/secret").c_str()), 0);
  EXPECT_TRUE(built_from_current_host(*jailed, s));

  // The wall time is the command's: it changes no plan.
  JailSpec timed = s;
  timed.limits.wall_time = std::chrono::milliseconds(1234);
  EXPECT_TRUE(built_from_current_host(*jailed, timed));
  JailSpec other = s;
  other.mounts[other.mounts.size() - 3].target = "/elsewhere";
  EXPECT_FALSE(built_from_current_host(*jailed, other)) << "planned for another spec";
}

// A jail built ahead from another's plan found unchanged (VerifiedPlan, as
// brig-spawner's pool does) takes that plan without planning again, runs as
// a freshly planned one, and is checked before use as any other: a change
// after the plan was found unchanged is found in it too. A plan for another
// spec is not taken.
TEST_F(AwaitingTest, AJailBuiltFromAVerifiedPlanIsCheckedLikeAnyOther) {
  const std::string ws = workspace_.path();
  JailSpec s = spec();
  Mount secret;
  secret.kind = Mount::Kind::mask;
  secret.target = ws + "/secret";
  s.mounts.push_back(secret);
  auto first = spawn_awaiting(s);
  ASSERT_TRUE(first) << first.error().to_string();
  ASSERT_TRUE(built_from_current_host(*first, s));
  const auto verified = verified_plan(*first);
  ASSERT_TRUE(verified);
  SpawnOptions with_plan;
  with_plan.verified = verified;

  auto taken = spawn_awaiting(s, with_plan);
  ASSERT_TRUE(taken) << taken.error().to_string();
  const auto its = verified_plan(*taken);
  ASSERT_TRUE(its);
  EXPECT_EQ(its->mounts.get(), verified->mounts.get()) << "planned again";
  EXPECT_EQ(its->from.get(), verified->from.get());
  EXPECT_TRUE(built_from_current_host(*taken, s));
  std::ofstream(ws + "/secret") << "token";
  EXPECT_FALSE(built_from_current_host(*taken, s)) << "hidden file written after the check";
  auto stale = spawn_awaiting(s, with_plan);  // built from the plan after the change
  ASSERT_TRUE(stale) << stale.error().to_string();
  EXPECT_FALSE(built_from_current_host(*stale, s)) << "an old plan passed for the host now";
  ASSERT_EQ(::unlink((ws + "/secret").c_str()), 0);
  EXPECT_TRUE(built_from_current_host(*stale, s));
  // It runs its command as a jail planned for it does.
  UniqueFd out(::memfd_create("jail-stdout", MFD_CLOEXEC));
  UniqueFd err(::memfd_create("jail-stderr", MFD_CLOEXEC));
  ExecRequest ls = probe_request({"ls", ws});
  ls.stdout_fd = out.get();
  ls.stderr_fd = err.get();
  ASSERT_TRUE(start_command(*stale, ls, std::nullopt));
  const Ran ran = wait_and_collect(*stale, out.get(), err.get());
  const Ran fresh = run_jail(s, probe_request({"ls", ws}));
  EXPECT_EQ(ran.outcome.exit_status(), 0) << ran.outcome.to_string() << ran.err;
  EXPECT_EQ(ran.out, fresh.out);

  // A bind source replaced after the plan was found unchanged (the
  // workspace made again): a build does not take the plan, it plans again,
  // and the bind sources it records are the new ones.
  const std::string moved = ws + ".moved";
  ASSERT_EQ(::rename(ws.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  {
    auto replanned = spawn_awaiting(s, with_plan);
    EXPECT_TRUE(replanned) << replanned.error().to_string();
    if (replanned) {
      const auto fresh_plan = verified_plan(*replanned);
      ASSERT_TRUE(fresh_plan);
      EXPECT_NE(fresh_plan->mounts.get(), verified->mounts.get())
          << "took a plan of the old workspace";
      EXPECT_TRUE(built_from_current_host(*replanned, s));
    }
  }
  ASSERT_EQ(::rmdir(ws.c_str()), 0);
  ASSERT_EQ(::rename(moved.c_str(), ws.c_str()), 0);

  JailSpec other = s;
  other.mounts.back().target = ws + "/other-secret";
  auto planned = spawn_awaiting(other, with_plan);
  ASSERT_TRUE(planned) << planned.error().to_string();
  const auto own = verified_plan(*planned);
  ASSERT_TRUE(own);
  EXPECT_NE(own->mounts.get(), verified->mounts.get()) << "took the plan of another spec";
  EXPECT_TRUE(built_from_current_host(*planned, other));
}

// A mask under a writable bind is a mount on the hidden file as it was when
// the jail was built. A file renamed over it (an editor's or a token
// refresher's save, or an earlier jail renaming a hidden file's parent away
// and writing a new one) lifts that mount in every mount namespace: the
// plan's answers are all the same (a file is still there), but the jail
// built ahead would show the new file, which a fresh jail masks.
TEST_F(AwaitingTest, AHiddenFileReplacedByRenameMeansItNoLongerMatches) {
  TempDir parent;
  const std::string ws = parent.path() + "/ws";
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  const std::string secret = ws + "/secret";
  std::ofstream(secret) << "old-token\n";
  const JailSpec s = hiding(ws, secret);

  auto jailed = built_ahead_with_mount_at(s, secret);
  ASSERT_TRUE(jailed);
  EXPECT_TRUE(built_from_current_host(*jailed, s));

  std::ofstream(ws + "/secret.new") << "NEW-TOKEN\n";
  ASSERT_EQ(::rename((ws + "/secret.new").c_str(), secret.c_str()), 0);

  // A fresh jail masks the new file.
  const Ran fresh = run_jail(s, probe_request({"read", secret}));
  EXPECT_THAT(fresh.out, ::testing::Not(HasSubstr("NEW-TOKEN"))) << fresh.out;

  // The one built ahead must not be used, or must not show it either.
  EXPECT_FALSE(built_from_current_host(*jailed, s)) << "hidden file replaced by rename";
  // Why a pool must not hand it out: it shows the new file.
  EXPECT_THAT(output_in(*jailed, probe_request({"read", secret})), HasSubstr("NEW-TOKEN"));
}

// The git layer is a mount on the workspace's .git as it was when the jail
// was built. Once that directory is moved away and another made at its
// place (the host's `mv .git .git.bak && git init`, or any jail that had
// no .git when it was planned), the plan's answers are the same (.git is a
// directory), but the jail built ahead has its layer on the old directory
// and the new .git bare: its config and hooks writable on the host, where
// a fresh jail pins them read-only and takes every write in its own layer.
TEST_F(AwaitingTest, AGitDirectoryMovedAwayAndMadeAgainMeansItNoLongerMatches) {
  TempDir parent;
  const std::string ws = parent.path() + "/ws";
  const std::string git = ws + "/.git";
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(git.c_str(), 0755), 0);
  std::ofstream(git + "/config") << "[core]\n";
  std::ofstream(git + "/HEAD") << "ref: refs/heads/main\n";
  JailSpec s = base_spec(ws);
  Mount layer;
  layer.kind = Mount::Kind::git;
  layer.target = git;
  s.mounts.push_back(layer);

  auto jailed = built_ahead_with_mount_at(s, git + "/config");
  ASSERT_TRUE(jailed);
  EXPECT_TRUE(built_from_current_host(*jailed, s));

  ASSERT_EQ(::rename(git.c_str(), (ws + "/old.git").c_str()), 0);
  ASSERT_EQ(::mkdir(git.c_str(), 0755), 0);
  std::ofstream(git + "/config") << "[core]\n";
  std::ofstream(git + "/HEAD") << "ref: refs/heads/main\n";

  // A fresh jail pins the new config read-only.
  const Ran fresh = run_jail(s, probe_request({"write", git + "/config"}));
  EXPECT_NE(fresh.outcome.exit_status(), 0) << fresh.out;

  EXPECT_FALSE(built_from_current_host(*jailed, s)) << ".git moved away and made again";
  // Why a pool must not hand it out: its command writes the host's config.
  const std::string out = output_in(*jailed, probe_request({"write", git + "/config"}));
  std::ifstream in(git + "/config");
  const std::string host_config((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(host_config, "probe\n") << out;
}

// The same with the hidden file's directory moved away and made again. An
// earlier jail cannot do it (the directory is pinned in every jail: a mount
// point it can neither rename nor remove); the host can. The jail built
// ahead meanwhile has its mask on the file that moved away, and every
// answer its plan was made from is the same: it would show, unmasked,
// whatever the host writes at the hidden path next.
TEST_F(AwaitingTest, AHiddenFilesDirectoryMovedAwayMeansItNoLongerMatches) {
  TempDir parent;
  const std::string ws = parent.path() + "/ws";
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((ws + "/conf").c_str(), 0755), 0);
  const std::string secret = ws + "/conf/secret";
  std::ofstream(secret) << "old-token\n";
  const JailSpec s = hiding(ws, secret);

  auto jailed = built_ahead_with_mount_at(s, secret);
  ASSERT_TRUE(jailed);

  // An earlier jail, fresh, with the same spec, cannot move the directory
  // away: it is pinned (a mount point in that jail, EBUSY).
  ExecRequest sh;
  sh.argv = {"/bin/sh", "-c", "cd " + ws + " && mv conf conf.old"};
  sh.env = {"PATH=/usr/bin:/bin", "LANG=C"};
  const Ran earlier = run_jail(s, sh);
  EXPECT_NE(earlier.outcome.exit_status(), 0) << earlier.outcome.to_string() << earlier.err;
  // The host can: it moves the directory away, makes another, and writes the
  // hidden path there afterwards.
  ASSERT_EQ(::rename((ws + "/conf").c_str(), (ws + "/conf.old").c_str()), 0);
  ASSERT_EQ(::mkdir((ws + "/conf").c_str(), 0755), 0);
  std::ofstream(secret) << "NEW-TOKEN\n";

  const Ran fresh = run_jail(s, probe_request({"read", secret}));
  EXPECT_THAT(fresh.out, ::testing::Not(HasSubstr("NEW-TOKEN"))) << fresh.out;

  EXPECT_FALSE(built_from_current_host(*jailed, s)) << "hidden file's directory moved away";
  EXPECT_THAT(output_in(*jailed, probe_request({"read", secret})), HasSubstr("NEW-TOKEN"));
}

// A file system that hands a freed inode number to the next file (ext4)
// makes a file at the same path with the same device and inode as the one
// a jail built ahead bound or masked: its birth time tells them apart.
TEST_F(AwaitingTest, AReusedInodeNumberIsNotTheSameFile) {
  TempDir parent;
  const std::string ws = parent.path() + "/ws";
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  const std::string secret = ws + "/secret";
  std::ofstream(secret) << "old-token\n";
  struct stat was {};
  ASSERT_EQ(::stat(secret.c_str(), &was), 0);
  const JailSpec s = hiding(ws, secret);
  auto jailed = built_ahead_with_mount_at(s, secret);
  ASSERT_TRUE(jailed);

  // Replaced by rename (the mask lifted), then again by a file that got the
  // old inode number back.
  std::ofstream(ws + "/x") << "x\n";
  ASSERT_EQ(::rename((ws + "/x").c_str(), secret.c_str()), 0);
  bool reused = false;
  for (int i = 0; i < 64 && !reused; ++i) {
    const std::string name = ws + "/try" + std::to_string(i);
    std::ofstream(name) << "NEW-TOKEN\n";
    struct stat now {};
    ASSERT_EQ(::stat(name.c_str(), &now), 0);
    if (now.st_ino == was.st_ino && now.st_dev == was.st_dev) {
      ASSERT_EQ(::rename(name.c_str(), secret.c_str()), 0);
      reused = true;
    }
  }
  if (!reused) GTEST_SKIP() << "this file system did not hand the inode number out again";
  EXPECT_FALSE(built_from_current_host(*jailed, s)) << "same device and inode, another file";
}

// Every open_files a spec may have, down to 3 (stdio), runs a command:
// the limit is the command's, applied after the setup's own fds (Landlock's
// ruleset and paths) are done with; and a jail built ahead, which has it in
// place before its command's stdio arrives, receives those fds on 0-2.
TEST_F(AwaitingTest, TheFewestOpenFilesRunACommandFreshOrBuiltAhead) {
  for (uint64_t n = 3; n <= 12; ++n) {
    JailSpec s = spec();
    s.limits.open_files = n;
    const Ran fresh = run_jail(s, probe_request({"exit", "0"}));
    EXPECT_EQ(fresh.outcome.exit_status(), 0)
        << "fresh, open_files " << n << ": " << fresh.outcome.to_string();
    const Ran ahead = run_awaiting_in(s, probe_request({"exit", "0"}));
    EXPECT_EQ(ahead.outcome.exit_status(), 0)
        << "built ahead, open_files " << n << ": " << ahead.outcome.to_string();
  }
}

// While it waits, the command's process shares the init's memory: nothing
// outside the jail but the launcher's own privilege may ptrace it or open
// its memory (an unprivileged brig's host user included).
TEST_F(AwaitingTest, ItsWaitingCommandCannotBeTracedOrWrittenFromTheHost) {
  auto jailed = spawn_awaiting(spec());
  ASSERT_TRUE(jailed) << jailed.error().to_string();
  const std::string children = "/proc/" + std::to_string(jailed->pid()) + "/task/" +
                               std::to_string(jailed->pid()) + "/children";
  pid_t command = -1;
  for (int i = 0; i < 500 && command < 0; ++i) {
    std::ifstream in(children);
    if (!(in >> command)) command = -1;
    if (command < 0) std::this_thread::sleep_for(10ms);
  }
  ASSERT_GT(command, 0);
  if (::geteuid() == 0) GTEST_SKIP() << "root may trace anything";
  for (pid_t pid : {command, jailed->pid()}) {
    const std::string mem = "/proc/" + std::to_string(pid) + "/mem";
    EXPECT_LT(::open(mem.c_str(), O_RDWR | O_CLOEXEC), 0) << mem;
    EXPECT_NE(::ptrace(PTRACE_SEIZE, pid, 0, 0), 0) << pid;
  }
}

// The fallback tier (no user namespace; run under user.max_user_namespaces
// = 0 to see it): the command built ahead is confined like a fresh one and
// a jail dropped unused leaves nothing behind, without a pid namespace.
TEST_F(AwaitingTest, FallbackTierBuiltAheadLikeFresh) {
  JailSpec s = spec();
  s.required.clear();
  const Ran fresh = run_jail(s, probe_request({"status"}));
  if (fresh.outcome.layers.to_string().find("user namespaces refused") == std::string::npos)
    GTEST_SKIP() << "user namespaces available";
  const Ran ahead = run_awaiting_in(s, probe_request({"status"}));
  ASSERT_EQ(ahead.outcome.exit_status(), 0) << ahead.outcome.to_string() << ahead.err;
  auto but_pid = [](const std::string& out) {
    std::vector<std::string> l = lines(out);
    std::erase_if(l, [](const std::string& x) { return x.starts_with("pid="); });
    return l;
  };
  EXPECT_EQ(but_pid(ahead.out), but_pid(fresh.out));
  const Ran fds = run_awaiting_in(s, probe_request({"fds"}));
  EXPECT_THAT(lines(fds.out), ElementsAre("fd=0", "fd=1", "fd=2"));
  for (uint64_t n = 3; n <= 16; ++n) {
    JailSpec l = s;
    l.limits.open_files = n;
    if (run_jail(l, probe_request({"exit", "0"})).outcome.exit_status() != 0) continue;
    EXPECT_EQ(run_awaiting_in(l, probe_request({"exit", "0"})).outcome.exit_status(), 0) << n;
  }
  const auto t0 = std::chrono::steady_clock::now();
  {
    auto jailed = spawn_awaiting(s);
    ASSERT_TRUE(jailed) << jailed.error().to_string();
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "the drop waited";
}

// What a jail built ahead runs gives what a fresh jail gives: the kind of
// end, the exit code and the output. Cwd edge cases (chdir now comes after
// the caps in both), an empty environment, and small limits in either tier
// (cgroups as root, rlimits unprivileged): the waiting command is the
// process that later runs the command, so it takes nothing extra from them.
TEST_F(AwaitingTest, CwdEdgeCasesAndAnEmptyEnvironmentLikeFresh) {
  const std::string ws = workspace_.path();
  ::mkdir((ws + "/locked").c_str(), 0700);
  ::chown((ws + "/locked").c_str(), 0, 0);  // as root: a directory the jail's root may not enter
  ::symlink(ws.c_str(), (ws + "/link").c_str());
  for (const std::string& cwd : {ws + "/missing", ws + "/link", ws + "/locked",
                                 std::string("/proc/self"), std::string("/etc/hostname")}) {
    ExecRequest r = probe_request({"exit", "0"});
    r.cwd = cwd;
    expect_like_fresh(spec(), r, "cwd " + cwd);
  }
  ExecRequest r = probe_request({"env"});
  r.env = {};
  expect_like_fresh(spec(), r, "empty env");
}

TEST_F(AwaitingTest, SmallMemoryAndFileSizeLimitsLikeFresh) {
  for (uint64_t mib : {1, 2, 4, 8}) {
    JailSpec s = spec();
    s.limits.memory_bytes = mib << 20;
    expect_like_fresh(s, probe_request({"exit", "0"}), "mem " + std::to_string(mib) + " exit");
    expect_like_fresh(s, probe_request({"alloc", std::to_string(mib * 2)}),
                      "mem " + std::to_string(mib) + " alloc");
  }
  JailSpec s = spec();
  s.limits.cpu_seconds = 1;
  s.limits.file_size_bytes = 1;
  expect_like_fresh(s, probe_request({"write", workspace_.path() + "/x"}), "fsize 1 write");
}

TEST_F(AwaitingTest, SmallPidsLimitsLikeFresh) {
  for (uint64_t n : {1, 2, 3}) {
    JailSpec s = spec();
    s.limits.pids = n;
    for (int k : {0, 1, 2, 3})
      expect_like_fresh(s, probe_request({"forks", std::to_string(k)}),
                        "pids " + std::to_string(n) + " forks " + std::to_string(k));
  }
}

// brig-spawner hands a jail's cgroups to the next jail with the same limits
// (cgroups::reuse_empty_groups): a reused group limits as a new one does, in
// a fresh jail as in one built ahead, and none is left once reuse ends.
TEST_F(AwaitingTest, ReusedCgroupsLimitLikeNewOnes) {
  JailSpec s = spec();
  s.limits.pids = 2;
  s.limits.memory_bytes = 8 << 20;
  const Ran forks = run_jail(s, probe_request({"forks", "3"}));
  const Ran alloc = run_jail(s, probe_request({"alloc", "16"}));
  // Whether this user gets whole groups for these limits (root here: v1,
  // two per jail); unprivileged, none (the limits are rlimits).
  cgroups::Group probe = cgroups::create(s.limits);
  const bool whole = probe.tier != LimitsTier::none && probe.limits_pids && probe.limits_memory;
  const std::size_t per_jail = probe.paths.size();
  cgroups::remove(probe);
  cgroups::reuse_empty_groups(true);
  struct ReuseOff {
    ~ReuseOff() { cgroups::reuse_empty_groups(false); }
  } reuse_off;
  std::set<std::string> groups;
  int jails = 0;
  for (int i = 0; i < 3; ++i) {
    for (const bool ahead : {false, true}) {
      const auto run = [&](ExecRequest r) {
        ++jails;
        return ahead ? run_awaiting_in(s, std::move(r)) : run_jail(s, std::move(r));
      };
      const std::string what =
          std::string(ahead ? "built ahead" : "fresh") + ", round " + std::to_string(i);
      const Ran f = run(probe_request({"forks", "3"}));
      EXPECT_EQ(f.outcome.kind, forks.outcome.kind) << what << ": " << f.outcome.to_string();
      EXPECT_EQ(f.outcome.exit_code, forks.outcome.exit_code) << what;
      EXPECT_EQ(f.out, forks.out) << what;
      const Ran a = run(probe_request({"alloc", "16"}));
      EXPECT_EQ(a.outcome.kind, alloc.outcome.kind) << what << ": " << a.outcome.to_string();
      EXPECT_EQ(a.outcome.exit_code, alloc.outcome.exit_code) << what;
      for (const auto& g : our_cgroups()) groups.insert(g);
    }
  }
  // Each jail's groups are empty once its end is reported: the next jail
  // takes them (one more set allowed, if one was still busy).
  if (whole) {
    EXPECT_FALSE(groups.empty()) << "no group kept for reuse";
    EXPECT_LE(groups.size(), 2 * per_jail) << groups.size() << " groups for " << jails << " jails";
  }
  cgroups::reuse_empty_groups(false);
  EXPECT_TRUE(our_cgroups().empty()) << "spares left after reuse ended";
}

// The largest pids a spec may have is no limit at all, not none: without a
// cgroup it is RLIMIT_NPROC, one more than pids (the init), which must not
// wrap to 0.
TEST_F(AwaitingTest, TheLargestPidsStillForks) {
  JailSpec s = spec();
  s.limits.pids = std::numeric_limits<uint64_t>::max();
  const Ran fresh = run_jail(s, probe_request({"forks", "2"}));
  if (fresh.outcome.kind == Outcome::Kind::setup_failed)
    GTEST_SKIP() << "refused at setup (cgroup pids.max): " << fresh.outcome.to_string();
  EXPECT_THAT(fresh.out, HasSubstr("forked=2")) << fresh.outcome.to_string();
  const Ran built = run_awaiting_in(s, probe_request({"forks", "2"}));
  EXPECT_THAT(built.out, HasSubstr("forked=2")) << built.outcome.to_string() << built.err;
}

}  // namespace
}  // namespace brig::jail::test
