// Landlock in a real kernel: a forked child restricts itself and each probe
// runs in a grandchild, once without Landlock (the control: every attempt
// works) and once with it. Network probes use loopback listeners this test
// makes; the signal probe targets a process this test forks.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "jail/base/unique_fd.h"
#include "jail/steps/caps.h"
#include "jail/steps/landlock.h"
#include "tests/jail/steps/child.h"

namespace brig::jail {
namespace {

using testing::kSucceeds;
using testing::Probe;
using testing::spawn_true;

long open_and_close(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  close(fd);
  return 0;
}

// A TCP listener on 127.0.0.1 at a port the kernel picks.
struct Listener {
  UniqueFd fd;
  uint16_t port = 0;
};
Listener listen_on_loopback() {
  Listener l;
  l.fd.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(l.fd.get(), 16) != 0 ||
      getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "loopback listener: " << std::strerror(errno);
    return l;
  }
  l.port = ntohs(addr.sin_port);
  return l;
}

long tcp_connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
}

long tcp_bind_any_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
}

// An abstract unix socket address (leading NUL) and its length.
std::pair<sockaddr_un, socklen_t> abstract_address(const std::string& name) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  return {addr, static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())};
}

int abstract_listener(const std::string& name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto [addr, len] = abstract_address(name);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 4) != 0)
    return -1;
  return fd;
}

long abstract_connect(const std::string& name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  auto [addr, len] = abstract_address(name);
  return connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
}

std::string no_setup() {
  return "";
}

class LandlockKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/brig-landlock-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr) << std::strerror(errno);
    root_ = dir;
    for (const char* sub : {"/rw", "/ro", "/hidden"})
      ASSERT_EQ(mkdir((root_ + sub).c_str(), 0755), 0) << sub;
    for (const char* file : {"/ro/data", "/hidden/secret", "/single"})
      ASSERT_EQ(open_and_close(root_ + file, O_CREAT | O_WRONLY), 0) << file;
    abi_ = landlock::probe_abi();
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }

  // Applies `rules` the way the jail does: no_new_privs, then Landlock.
  static std::function<int()> apply(const LandlockRules& rules) {
    auto prepared = landlock::prepare(rules);
    if (!prepared) {
      ADD_FAILURE() << prepared.error().to_string();
      return [] { return EINVAL; };
    }
    EXPECT_TRUE(prepared->unenforced.empty()) << prepared->unenforced.front();
    return [p = *prepared] {
      if (int err = caps::set_no_new_privs_in_child()) return err;
      return landlock::apply_in_child(p);
    };
  }

  // Rules that leave the filesystem open, for the network and scope tests.
  static LandlockRules open_filesystem() {
    LandlockRules rules;
    rules.read_write = {"/"};
    rules.scope_abstract_unix = false;
    rules.scope_signals = false;
    return rules;
  }

  void expect_probes(const std::vector<Probe>& probes, const LandlockRules& rules) {
    EXPECT_EQ(testing::run_probes(probes, no_setup, nullptr), "");
    EXPECT_EQ(testing::run_probes(probes, no_setup, apply(rules)), "");
  }

  std::string root_;
  int abi_ = 0;
};

// This project's machines all have Landlock (ABI 7 on Linux 6.18): a missing
// Landlock is a failure here, not a skip.
TEST_F(LandlockKernel, ProbeFindsTheKernelAbi) {
  EXPECT_GE(abi_, 6) << "the kernel's Landlock ABI is too old for brig's scoping";
  EXPECT_LE(abi_, landlock_abi::kNewestKnownAbi);
}

TEST_F(LandlockKernel, FilesystemAccessIsOnlyWhatRulesGrant) {
  LandlockRules rules;
  rules.read_only = {"/usr",
                     "/bin",
                     "/lib",
                     "/lib64",
                     "/etc",
                     root_ + "/ro",
                     root_ + "/single",
                     root_ + "/does-not-exist"};
  rules.read_write = {root_ + "/rw"};
  const std::string r = root_;
  std::vector<Probe> probes = {
      {"create and remove in the read-write dir",
       [r] {
         std::string path = r + "/rw/new";
         return open_and_close(path, O_CREAT | O_WRONLY) < 0 ? -1L : long{unlink(path.c_str())};
       },
       kSucceeds, kSucceeds},
      {"create outside the rules",
       [r] { return open_and_close(r + "/hidden/new", O_CREAT | O_WRONLY); }, EACCES, kSucceeds},
      {"read an unlisted file", [r] { return open_and_close(r + "/hidden/secret", O_RDONLY); },
       EACCES, kSucceeds},
      {"list an unlisted directory",
       [r] { return open_and_close(r + "/hidden", O_RDONLY | O_DIRECTORY); }, EACCES, kSucceeds},
      {"read a read-only file", [r] { return open_and_close(r + "/ro/data", O_RDONLY); }, kSucceeds,
       kSucceeds},
      {"write a read-only file", [r] { return open_and_close(r + "/ro/data", O_WRONLY); }, EACCES,
       kSucceeds},
      {"truncate a read-only file", [r] { return long{truncate((r + "/ro/data").c_str(), 0)}; },
       EACCES, kSucceeds},
      {"create in a read-only dir",
       [r] { return open_and_close(r + "/ro/new", O_CREAT | O_WRONLY); }, EACCES, kSucceeds},
      {"read a file granted on its own", [r] { return open_and_close(r + "/single", O_RDONLY); },
       kSucceeds, kSucceeds},
      {"write a file granted read-only on its own",
       [r] { return open_and_close(r + "/single", O_WRONLY); }, EACCES, kSucceeds},
      {"run /bin/true", spawn_true, kSucceeds, kSucceeds},
  };
  expect_probes(probes, rules);
}

// The jail's root gets list_only: its directories can be listed, and
// nothing beneath it can be read, written or run through that rule alone.
TEST_F(LandlockKernel, ListOnlyListsDirectoriesAndGrantsNothingElse) {
  LandlockRules rules;
  rules.read_only = {"/usr", "/bin", "/lib", "/lib64", "/etc"};
  rules.list_only = {root_};
  const std::string r = root_;
  std::vector<Probe> probes = {
      {"list the listed directory", [r] { return open_and_close(r, O_RDONLY | O_DIRECTORY); },
       kSucceeds, kSucceeds},
      {"list a directory beneath it",
       [r] { return open_and_close(r + "/hidden", O_RDONLY | O_DIRECTORY); }, kSucceeds, kSucceeds},
      {"read a file beneath it", [r] { return open_and_close(r + "/hidden/secret", O_RDONLY); },
       EACCES, kSucceeds},
      {"write a file beneath it", [r] { return open_and_close(r + "/ro/data", O_WRONLY); }, EACCES,
       kSucceeds},
      {"create beneath it", [r] { return open_and_close(r + "/rw/new", O_CREAT | O_WRONLY); },
       EACCES, kSucceeds},
  };
  expect_probes(probes, rules);
}

TEST_F(LandlockKernel, TcpBindAndConnectFollowThePortRules) {
  ASSERT_GE(abi_, 4);
  Listener allowed = listen_on_loopback();
  Listener other = listen_on_loopback();
  LandlockRules rules = open_filesystem();
  rules.restrict_tcp = true;
  rules.connect_tcp = {allowed.port};
  std::vector<Probe> probes = {
      {"connect to the allowed port", [p = allowed.port] { return tcp_connect(p); }, kSucceeds,
       kSucceeds},
      {"connect to another port", [p = other.port] { return tcp_connect(p); }, EACCES, kSucceeds},
      {"bind a port", tcp_bind_any_port, EACCES, kSucceeds},
  };
  expect_probes(probes, rules);
}

TEST_F(LandlockKernel, AbstractUnixSocketsOutsideTheDomainAreUnreachable) {
  ASSERT_GE(abi_, 6);
  const std::string host_name = "brig-landlock-test-" + std::to_string(getpid());
  UniqueFd host(abstract_listener(host_name));
  ASSERT_TRUE(host) << std::strerror(errno);
  LandlockRules rules = open_filesystem();
  rules.scope_abstract_unix = true;
  std::vector<Probe> probes = {
      {"connect to a host abstract socket", [host_name] { return abstract_connect(host_name); },
       EPERM, kSucceeds},
      {"connect to an abstract socket of its own",
       [host_name] {
         std::string own = host_name + "-own";
         return abstract_listener(own) < 0 ? -1L : abstract_connect(own);
       },
       kSucceeds, kSucceeds},
  };
  expect_probes(probes, rules);
}

TEST_F(LandlockKernel, SignalsOutsideTheDomainAreRefused) {
  ASSERT_GE(abi_, 6);
  pid_t outsider = fork();
  ASSERT_GE(outsider, 0);
  if (outsider == 0) {
    alarm(120);
    for (;;) pause();
  }
  LandlockRules rules = open_filesystem();
  rules.scope_signals = true;
  std::vector<Probe> probes = {
      {"signal a process outside", [outsider] { return long{kill(outsider, 0)}; }, EPERM,
       kSucceeds},
      {"signal the restricted parent", [] { return long{kill(getppid(), 0)}; }, kSucceeds,
       kSucceeds},
  };
  expect_probes(probes, rules);
  kill(outsider, SIGKILL);
  waitpid(outsider, nullptr, 0);
}

}  // namespace
}  // namespace brig::jail
