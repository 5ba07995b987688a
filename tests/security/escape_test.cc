// Escape attempts: a probe inside a jail of the shipped default policy tries
// one way out per test, and must fail. Each test also runs the positive
// control: the same probe with only the layer under test switched off, or
// aimed at an allowed target, must succeed. Runs as root and as an
// unprivileged user (scripts/test.sh), and skips nothing.
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "jail/base/unique_fd.h"
#include "tests/security/security_support.h"

namespace brig::security::test {
namespace {

using jail::Layer;
using jail::test::lines;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const bool kRoot = ::getuid() == 0;

std::string read_host_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_host_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

bool host_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A listening TCP socket on 127.0.0.1 of the host, on a port the kernel picks.
struct LoopbackListener {
  UniqueFd fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  int port = 0;
  LoopbackListener() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) == 0 && ::listen(fd.get(), 8) == 0 &&
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0)
      port = ntohs(a.sin_port);
  }
  // Whether a connection is waiting to be accepted (it is taken off the queue).
  bool accepted() {
    UniqueFd c(::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    return c.get() >= 0;
  }
};

// A listening unix socket in the host's abstract namespace.
struct AbstractListener {
  UniqueFd fd{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  bool ok = false;
  explicit AbstractListener(const std::string& name) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    name.copy(a.sun_path + 1, sizeof a.sun_path - 2);
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ok = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) == 0 && ::listen(fd.get(), 8) == 0;
  }
  bool accepted() {
    UniqueFd c(::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    return c.get() >= 0;
  }
};

using EscapeTest = SecurityTest;

TEST_F(EscapeTest, HiddenHomeFileIsAbsent) {
  // The caller's real home holds a secret; default gives the jail an empty
  // private home at the same path instead.
  write_host_file(home() + "/notes.txt", "host secret\n", 0600);
  const BrigRan attack = brig_run({"--", probe_path(), "read", home() + "/notes.txt", marker()});
  EXPECT_EQ(attack.status, 1) << attack.err;
  EXPECT_EQ(attack.out, "err=ENOENT (open)\n");

  // Control: a policy that binds the home (read-only) shows the same file
  // (readable to all: as root, the jail's root is nobody on the host).
  ASSERT_EQ(::chmod((home() + "/notes.txt").c_str(), 0644), 0);
  const std::string bound = policy_file("home-bound",
                                        "extends = \"default\"\n"
                                        "[filesystem]\n"
                                        "private_home = false\n"
                                        "read_only_add = [\"~\"]\n");
  const BrigRan control =
      brig_run({"--policy", bound, "--", probe_path(), "read", home() + "/notes.txt", marker()});
  EXPECT_EQ(control.status, 0) << control.err;
  EXPECT_EQ(control.out, "host secret\nbytes=12\n");
}

TEST_F(EscapeTest, HiddenPathUnderABoundHomeIsMasked) {
  ASSERT_EQ(::mkdir((home() + "/.ssh").c_str(), 0700), 0);
  write_host_file(home() + "/.ssh/id_ed25519", "PRIVATE KEY\n", 0600);
  // The home bound read-only: default's `hidden` still masks ~/.ssh in it.
  const std::string bound = policy_file("home-bound",
                                        "extends = \"default\"\n"
                                        "[filesystem]\n"
                                        "private_home = false\n"
                                        "read_only_add = [\"~\"]\n");
  const BrigRan attack = brig_run(
      {"--policy", bound, "--", probe_path(), "read", home() + "/.ssh/id_ed25519", marker()});
  EXPECT_THAT(attack.out, Not(HasSubstr("PRIVATE KEY")));
  EXPECT_THAT(attack.out,
              ::testing::AnyOf("bytes=0\n", "err=ENOENT (open)\n", "err=EACCES (open)\n"));

  // Control: the same binding with nothing hidden shows the key (readable
  // to all: as root, the jail's root is nobody on the host).
  ASSERT_EQ(::chmod((home() + "/.ssh").c_str(), 0755), 0);
  ASSERT_EQ(::chmod((home() + "/.ssh/id_ed25519").c_str(), 0644), 0);
  const std::string unhidden = policy_file("home-unhidden",
                                           "extends = \"default\"\n"
                                           "[filesystem]\n"
                                           "private_home = false\n"
                                           "read_only_add = [\"~\"]\n"
                                           "hidden = []\n");
  const BrigRan control = brig_run(
      {"--policy", unhidden, "--", probe_path(), "read", home() + "/.ssh/id_ed25519", marker()});
  EXPECT_EQ(control.status, 0) << control.err;
  EXPECT_EQ(control.out, "PRIVATE KEY\nbytes=12\n");
}

TEST_F(EscapeTest, RootSecretsAreUnreadable) {
  // By default no jail's root is host root: root's jail, like a user's,
  // cannot open /etc/shadow, with no mask involved.
  const Planned planned = plan_default({"read", "/etc/shadow"});
  for (const jail::Mount& m : planned.spec.mounts) EXPECT_NE(m.target, "/etc/shadow") << "masked";
  const Ran attack = run(planned);
  EXPECT_EQ(attack.out, "err=EACCES (open)\n");

  // As host root (the dangerous mode) it is masked (empty).
  const std::string host_root = policy_file("host-root",
                                            "extends = \"default\"\n"
                                            "[identity]\n"
                                            "as_root = \"dangerously_host_root\"\n");
  const Ran masked = run(plan(host_root, {"read", "/etc/shadow"}));
  EXPECT_THAT(masked.out, ::testing::AnyOf("bytes=0\n", "err=EACCES (open)\n"));

  const std::string unmasked = policy_file("unmasked",
                                           "extends = \"default\"\n"
                                           "[identity]\n"
                                           "as_root = \"dangerously_host_root\"\n"
                                           "dangerously_unmask_root_secrets = true\n");
  const Ran control = run(plan(unmasked, {"read", "/etc/shadow"}));
  if (kRoot) {
    // Only host root can read /etc/shadow at all: the control needs it.
    EXPECT_EQ(control.outcome.exit_status(), 0) << control.out;
    EXPECT_THAT(control.out, HasSubstr("root:"));
  } else {
    EXPECT_EQ(control.out, "err=EACCES (open)\n");
  }
}

TEST_F(EscapeTest, WritesOutsideReadWritePathsFail) {
  TempDir outside;  // a host directory the policy does not bind
  const std::string targets[] = {outside.path() + "/planted", "/etc/brig-planted",
                                 "/usr/brig-planted", "/brig-planted"};
  for (const std::string& target : targets) {
    const Ran attack = run(plan_default({"write", target}));
    EXPECT_EQ(attack.outcome.exit_status(), 1) << target << ": " << attack.out;
    EXPECT_THAT(attack.out, HasSubstr("err=")) << target;
    EXPECT_FALSE(host_exists(target)) << target;
  }
  // Control: the workspace is writable, through to the host.
  const Ran control = run(plan_default({"write", workspace() + "/made"}));
  EXPECT_EQ(control.out, "ok\n");
  EXPECT_EQ(read_host_file(workspace() + "/made"), "probe\n");
}

// A read_only path nested below the writable workspace (policies/README.md:
// "a read_only path inside a read_write one stays read-only") stays so
// against two jails: one renaming its parent away and planting a stand-in
// at the old path, so that the next (an exec, or a fresh file worker) binds
// the stand-in read-only, writes the original under the new name and
// renames it back. Its parents are pinned: the first rename fails (EBUSY).
TEST_F(EscapeTest, NestedReadOnlyPathSurvivesItsParentsRename) {
  const std::string ro = workspace() + "/a/b";
  ASSERT_TRUE(std::filesystem::create_directories(ro));
  write_host_file(ro + "/conf", "original\n");
  const std::string policy = policy_file(
      "nested-ro", "extends = \"default\"\n[filesystem]\nread_only_add = [\"" + ro + "\"]\n");
  // Control: written directly, the path is read-only.
  const BrigRan direct =
      brig_run({"--policy", policy, "--", "/bin/sh", "-c", "echo evil > a/b/conf"});
  EXPECT_NE(direct.status, 0) << direct.out << direct.err;
  EXPECT_EQ(read_host_file(ro + "/conf"), "original\n");

  // The attack: two jails of the same policy.
  brig_run({"--policy", policy, "--", "/bin/sh", "-c",
            "mv a a2 && mkdir -p a/b && echo stand-in > a/b/conf"});
  brig_run(
      {"--policy", policy, "--", "/bin/sh", "-c", "echo evil > a2/b/conf; mv a a3 && mv a2 a"});
  // Wherever the original went, it still says what it said.
  for (const char* at : {"/a/b/conf", "/a2/b/conf", "/a3/b/conf"})
    EXPECT_NE(read_host_file(workspace() + at), "evil\n") << at;
}

// The same for a hidden file below the writable workspace: a jail that could
// rename its directory away would have the next jail (planned for the path,
// not the file) show it under the new name.
TEST_F(EscapeTest, HiddenFileInTheWorkspaceCannotBeMovedOutFromUnderItsMask) {
  const std::string dir = workspace() + "/conf/prod";
  ASSERT_TRUE(std::filesystem::create_directories(dir));
  write_host_file(dir + "/secret", "TOKEN\n");
  const std::string policy =
      policy_file("nested-hidden",
                  "extends = \"default\"\n[filesystem]\nhidden_add = [\"" + dir + "/secret\"]\n");
  const BrigRan moved = brig_run({"--policy", policy, "--", "/bin/sh", "-c",
                                  "mv conf conf2 || mv conf/prod conf/prod2 || exit 3"});
  EXPECT_EQ(moved.status, 3) << moved.out << moved.err;
  const BrigRan next =
      brig_run({"--policy", policy, "--", "/bin/sh", "-c",
                "cat conf/prod/secret conf2/prod/secret conf/prod2/secret 2>/dev/null; true"});
  EXPECT_THAT(next.out, Not(HasSubstr("TOKEN"))) << next.err;
  EXPECT_EQ(read_host_file(dir + "/secret"), "TOKEN\n");
}

TEST_F(EscapeTest, SetuidFilesCannotBeCreated) {
  const std::string attack_dir = workspace() + "/attack", control_dir = workspace() + "/control";
  ASSERT_EQ(::mkdir(attack_dir.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(control_dir.c_str(), 0755), 0);
  auto special_bits = [](const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      struct stat st {};
      ::lstat(e.path().c_str(), &st);
      if (st.st_mode & 06000) out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  };

  const Ran attack = run(plan_default({"setuid-files", attack_dir}));
  EXPECT_THAT(lines(attack.out), ElementsAre("chmod=EPERM", "fchmod=EPERM", "fchmodat=EPERM",
                                             "open=EPERM", "mknod=EPERM"));
  EXPECT_THAT(special_bits(attack_dir), ::testing::IsEmpty());

  // Control, seccomp off: every way works, and the host sees the bits.
  Planned p = plan_default({"setuid-files", control_dir});
  p.spec = without(p.spec, Layer::seccomp);
  const Ran control = run(p);
  EXPECT_THAT(lines(control.out),
              ElementsAre("chmod=ok", "fchmod=ok", "fchmodat=ok", "open=ok", "mknod=ok"));
  EXPECT_THAT(special_bits(control_dir), ElementsAre("created", "node", "plain"));
}

TEST_F(EscapeTest, MountIsRefusedEvenInANestedUserNamespace) {
  // The capabilities mount needs come with a nested user namespace.
  const Ran attack = run(plan_default({"userns", "mount", "/tmp"}));
  EXPECT_THAT(lines(attack.out), ElementsAre("unshare=EPERM", "mount=EPERM", "fsopen=EPERM"));
  // Each layer alone holds: seccomp refuses unshare and the mount family,
  // and Landlock refuses any mount by a process it restricts.
  Planned seccomp_only = plan_default({"userns", "mount", "/tmp"});
  seccomp_only.spec = without(seccomp_only.spec, Layer::landlock);
  EXPECT_THAT(lines(run(seccomp_only).out),
              ElementsAre("unshare=EPERM", "mount=EPERM", "fsopen=EPERM"));
  Planned landlock_only = plan_default({"userns", "mount", "/tmp"});
  landlock_only.spec = without(landlock_only.spec, Layer::seccomp);
  EXPECT_THAT(lines(run(landlock_only).out), ElementsAre("unshare=ok", "mount=EPERM", "fsopen=ok"));

  // Control, both off: the nested namespace mounts.
  Planned p = plan_default({"userns", "mount", "/tmp"});
  p.spec = without(without(p.spec, Layer::seccomp), Layer::landlock);
  EXPECT_THAT(lines(run(p).out), ElementsAre("unshare=ok", "mount=ok", "fsopen=ok"));
}

TEST_F(EscapeTest, PtraceIsRefused) {
  const Ran attack = run(plan_default({"ptrace"}));
  EXPECT_THAT(lines(attack.out), ElementsAre("ptrace=EPERM", "process_vm_readv=EPERM"));

  Planned p = plan_default({"ptrace"});
  p.spec = without(p.spec, Layer::seccomp);
  const Ran control = run(p);
  EXPECT_THAT(lines(control.out), ElementsAre("ptrace=ok", "process_vm_readv=ok"));
}

TEST_F(EscapeTest, HostProcessIsInvisible) {
  HostSleeper host;
  const std::string dir = "/proc/" + std::to_string(host.pid());
  const Ran attack = run(plan_default({"ls", dir}));
  EXPECT_EQ(attack.out, "err=ENOENT (opendir)\n");
  const Ran listing = run(plan_default({"pids"}));
  EXPECT_THAT(lines(listing.out), ElementsAre("1", "2"));

  // Control: in the host's pid namespace (and its /proc) the process shows.
  Planned p = plan_default({"ls", dir});
  p.spec = with_host_pids(p.spec);
  const Ran control = run(p);
  EXPECT_EQ(control.outcome.exit_status(), 0) << control.out << control.outcome.to_string();
  EXPECT_THAT(lines(control.out), Contains("cmdline"));
  EXPECT_TRUE(host.alive());
}

TEST_F(EscapeTest, HostProcessCannotBeKilled) {
  HostSleeper host;
  const std::string pid = std::to_string(host.pid());
  // The jail's pid namespace has no such process.
  const Ran attack = run(plan_default({"signal", pid, "9"}));
  EXPECT_EQ(attack.out, "kill=ESRCH\n");
  // In the host's pid namespace, Landlock's signal scoping alone refuses.
  Planned scoped = plan_default({"signal", pid, "9"});
  scoped.spec = with_host_pids(scoped.spec);
  const Ran scoped_attack = run(scoped);
  EXPECT_EQ(scoped_attack.out, "kill=EPERM\n");
  EXPECT_TRUE(host.alive());

  // Control: with neither, the host process dies. As root the default
  // jail's root is nobody on the host, whom the kernel refuses too: the
  // control takes root's identity.
  Planned p = plan_default({"signal", pid, "9"});
  p.spec = with_host_pids(p.spec);
  p.spec.landlock.scope_signals = false;
  if (kRoot) {
    EXPECT_EQ(run(p).out, "kill=EPERM\n");  // the host uid alone refuses
    EXPECT_TRUE(host.alive());
    p.spec.identity = {0, 0, 0, 0};
    for (jail::Mount& m : p.spec.mounts) m.keep_owner = false;
  }
  const Ran control = run(p);
  EXPECT_EQ(control.out, "kill=ok\n");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (host.alive() && std::chrono::steady_clock::now() < deadline) ::usleep(5000);
  ASSERT_FALSE(host.alive());
  EXPECT_TRUE(WIFSIGNALED(host.status()) && WTERMSIG(host.status()) == SIGKILL);
}

TEST_F(EscapeTest, HostLoopbackListenerIsUnreachable) {
  LoopbackListener host;
  ASSERT_NE(host.port, 0);
  const std::string port = std::to_string(host.port);
  // default: the jail's own network namespace has no route to the host.
  const Ran attack = run(plan_default({"connect-tcp", port}));
  EXPECT_EQ(attack.out, "connect=ECONNREFUSED\n");

  // Each layer alone: the jail's own network namespace has no listener
  // there, and on the host's network Landlock's TCP rule refuses.
  Planned netns = plan_default({"connect-tcp", port});
  netns.spec.landlock.restrict_tcp = false;
  EXPECT_EQ(run(netns).out, "connect=ECONNREFUSED\n");
  Planned tcp_rule = plan_default({"connect-tcp", port});
  tcp_rule.spec = with_host_network(tcp_rule.spec);
  tcp_rule.spec.landlock.restrict_tcp = true;
  EXPECT_EQ(run(tcp_rule).out, "connect=EACCES\n");
  EXPECT_FALSE(host.accepted());

  // Control: the host's network without the TCP rule reaches the listener.
  Planned p = plan_default({"connect-tcp", port});
  p.spec = with_host_network(p.spec);
  p.spec.landlock.restrict_tcp = false;
  EXPECT_EQ(run(p).out, "connect=ok\n");
  EXPECT_TRUE(host.accepted());
}

TEST_F(EscapeTest, HostAbstractUnixSocketIsUnreachable) {
  const std::string name = "brig-security-" + marker();
  AbstractListener host(name);
  ASSERT_TRUE(host.ok);
  // Abstract names belong to a network namespace: the jail's has none.
  const Ran attack = run(plan_default({"connect-abstract", name}));
  EXPECT_EQ(attack.out, "connect=ECONNREFUSED\n");
  // On the host's network, Landlock's abstract-socket scoping refuses.
  Planned scoped = plan_default({"connect-abstract", name});
  scoped.spec = with_host_network(scoped.spec);
  EXPECT_EQ(run(scoped).out, "connect=EPERM\n");
  EXPECT_FALSE(host.accepted());

  // Control: the host's network without the scoping connects.
  Planned p = plan_default({"connect-abstract", name});
  p.spec = with_host_network(p.spec);
  p.spec.landlock.scope_abstract_unix = false;
  EXPECT_EQ(run(p).out, "connect=ok\n");
  EXPECT_TRUE(host.accepted());
}

TEST_F(EscapeTest, RawSocketsAreRefused) {
  const Ran attack = run(plan_default({"userns", "raw-sockets"}));
  EXPECT_THAT(lines(attack.out), ElementsAre("unshare=EPERM", "raw=EPERM", "packet=EAFNOSUPPORT"));

  // Control, seccomp off: CAP_NET_RAW in a nested user and network namespace.
  Planned p = plan_default({"userns", "raw-sockets"});
  p.spec = without(p.spec, Layer::seccomp);
  const Ran control = run(p);
  EXPECT_THAT(lines(control.out), ElementsAre("unshare=ok", "raw=ok", "packet=ok"));
}

TEST_F(EscapeTest, TiocstiCannotInjectInput) {
  // The jail's own terminal (CI has none): a fresh pty whose slave is its stdin.
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  UniqueFd m(master), s(slave);
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  ::fcntl(slave, F_SETFD, FD_CLOEXEC);

  // What reached the terminal: the echo of injected input shows on the master.
  auto echoed = [&] {
    std::string got(256, '\0');
    const ssize_t n = ::read(m.get(), got.data(), got.size());
    got.resize(static_cast<size_t>(std::max<ssize_t>(n, 0)));
    return got;
  };
  ::fcntl(m.get(), F_SETFL, O_NONBLOCK);

  Planned attack = plan_default({"tiocsti"});
  attack.request.stdin_fd = s.get();
  EXPECT_THAT(lines(run(attack).out), ElementsAre("ctty=ok", "tiocsti=EPERM"));
  EXPECT_EQ(echoed(), "");

  // Control, seccomp off: the byte lands in the terminal's input.
  Planned control = plan_default({"tiocsti"});
  control.request.stdin_fd = s.get();
  control.spec = without(control.spec, Layer::seccomp);
  EXPECT_THAT(lines(run(control).out), ElementsAre("ctty=ok", "tiocsti=ok"));
  EXPECT_EQ(echoed(), "x");
}

TEST_F(EscapeTest, ProcSysIsReadOnly) {
  const std::string pattern = "/proc/sys/kernel/core_pattern";
  const std::string before = read_host_file(pattern);
  const Ran attack = run(plan_default({"write", pattern}));
  const std::string after = read_host_file(pattern);
  if (after != before && kRoot) std::ofstream(pattern) << before;  // undo a successful escape
  EXPECT_EQ(after, before);
  // By default no jail's uid 0 is host root: the file's permissions refuse.
  EXPECT_EQ(attack.out, "err=EACCES (open)\n");
  if (kRoot) {
    // As host root (the dangerous mode) the permissions allow it: only the
    // read-only /proc/sys stops it, the mount alone too (without Landlock).
    const std::string host_root = policy_file("host-root",
                                              "extends = \"default\"\n"
                                              "[identity]\n"
                                              "as_root = \"dangerously_host_root\"\n");
    EXPECT_EQ(run(plan(host_root, {"write", pattern})).out, "err=EROFS (open)\n");
    Planned mount_only = plan(host_root, {"write", pattern});
    mount_only.spec = without(mount_only.spec, Layer::landlock);
    EXPECT_EQ(run(mount_only).out, "err=EROFS (open)\n");
  }
  EXPECT_EQ(read_host_file(pattern), before);

  // Control: the same file is there and readable.
  const Ran control = run(plan_default({"read", pattern}));
  EXPECT_EQ(control.out, before + "bytes=" + std::to_string(before.size()) + "\n");
}

TEST_F(EscapeTest, CapabilitiesCannotBeGained) {
  const Ran attack = run(plan_default({"userns", "status"}));
  const auto l = lines(attack.out);
  EXPECT_THAT(l, Contains("unshare=EPERM"));
  for (const char* held :
       {"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000",
        "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"})
    EXPECT_THAT(l, Contains(held));

  // Control, seccomp off: a nested user namespace hands out every capability.
  Planned p = plan_default({"userns", "status"});
  p.spec = without(p.spec, Layer::seccomp);
  const auto c = lines(run(p).out);
  EXPECT_THAT(c, Contains("unshare=ok"));
  EXPECT_THAT(c, Contains(::testing::StartsWith("CapEff:\t000001ff")));
}

TEST_F(EscapeTest, HostEnvironmentVariableIsNotPassed) {
  const BrigRan ran = brig_run({"--", probe_path(), "env", marker()},
                               {"BRIG_SECRET_TEST=hunter2", "TERM=brig-term"});
  ASSERT_EQ(ran.status, 0) << ran.err;
  EXPECT_THAT(ran.out, Not(HasSubstr("hunter2")));
  EXPECT_THAT(ran.out, Not(HasSubstr("BRIG_SECRET_TEST")));
  // Control: TERM is on default's allowlist, and it gets in.
  EXPECT_THAT(lines(ran.out), Contains("TERM=brig-term"));
}

TEST_F(EscapeTest, InitEnvironShowsNoneOfBrigsEnvironment) {
  // The jail's pid 1 is a clone of brig, with brig's environment in its memory.
  const BrigRan attack = brig_run({"--", probe_path(), "read", "/proc/1/environ", marker()},
                                  {"BRIG_SECRET_TEST=hunter2"});
  EXPECT_THAT(attack.out, Not(HasSubstr("hunter2")));
  EXPECT_THAT(attack.out, Not(HasSubstr("PATH=/usr/local/bin")));  // brig's own PATH

  // Control: the command's own environ reads, with what the policy passed.
  const BrigRan control = brig_run({"--", probe_path(), "read", "/proc/self/environ", marker()},
                                   {"BRIG_SECRET_TEST=hunter2", "TERM=brig-term"});
  EXPECT_EQ(control.status, 0) << control.err;
  EXPECT_THAT(control.out, HasSubstr("TERM=brig-term"));
  EXPECT_THAT(control.out, Not(HasSubstr("hunter2")));
}

TEST_F(EscapeTest, InheritedFdIsNotFound) {
  // Handed to brig without CLOEXEC, low and high, as a careless shell would.
  UniqueFd low(::open(workspace().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_GE(low.get(), 3);
  UniqueFd high(::fcntl(low.get(), F_DUPFD, 200));
  ASSERT_GE(high.get(), 200);
  const BrigRan attack = brig_run({"--", probe_path(), "fds", marker()});
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_THAT(lines(attack.out), ElementsAre("fd=0", "fd=1", "fd=2"));

  // Control: the same probe run outside a jail finds both.
  UniqueFd out(::memfd_create("probe-out", MFD_CLOEXEC));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out.get(), 1);
    ::execl(probe_path().c_str(), "jail_probe", "fds", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  std::string text(4096, '\0');
  text.resize(static_cast<size_t>(std::max<ssize_t>(0, ::pread(out.get(), text.data(), 4096, 0))));
  EXPECT_THAT(lines(text), Contains("fd=" + std::to_string(low.get())));
  EXPECT_THAT(lines(text), Contains("fd=" + std::to_string(high.get())));
}

}  // namespace
}  // namespace brig::security::test
