// The jail tests' own support: processes_with() must hold up while processes
// come and go, since JailTest::TearDown calls it after every test.
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/jail/jail_test_support.h"

namespace brig::jail::test {
namespace {

pid_t start(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t p = ::fork();
  if (p == 0) {
    ::setpgid(0, 0);  // killed as a group: sh's sleep must not outlive the test
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return p;
}

TEST(ProcessesWithTest, FindsALiveProcessWhileOthersExitMidRead) {
  const std::string marker =
      "processes-with-" + std::to_string(::getpid()) + "-" + std::to_string(::time(nullptr));
  // sh -c CMD NAME: NAME is only $0, but it is in the command line. Two
  // commands, so that sh does not exec the last one in its place.
  const pid_t sleeper = start({"/bin/sh", "-c", "sleep 30; exit 0"});
  const pid_t sleeper_marked = start({"/bin/sh", "-c", "sleep 30; exit 0", marker});
  // Processes with the marker that exit all the time, so that some vanish
  // between readdir and the read of their cmdline.
  const pid_t churn = ::fork();
  if (churn == 0) {
    for (;;) {
      const pid_t p = start({"/bin/true", marker});
      if (p > 0) ::waitpid(p, nullptr, 0);
    }
  }
  ASSERT_GT(churn, 0);

  auto has = [](const std::vector<pid_t>& pids, pid_t p) {
    return std::find(pids.begin(), pids.end(), p) != pids.end();
  };
  // Until sh has exec'd, its command line is still this test's.
  const auto started = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!has(processes_with(marker), sleeper_marked) && std::chrono::steady_clock::now() < started)
    ::usleep(1000);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int rounds = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pid_t> found;
    ASSERT_NO_THROW(found = processes_with(marker));
    EXPECT_TRUE(has(found, sleeper_marked));
    EXPECT_FALSE(has(found, sleeper));
    ++rounds;
  }
  EXPECT_GT(rounds, 10);
  ::kill(churn, SIGKILL);
  ::kill(-sleeper, SIGKILL);
  ::kill(-sleeper_marked, SIGKILL);
  // Reap everything: once an earlier JailTest has made this process a
  // subreaper, the sleeps and the churn's last child come back to it, and a
  // zombie left here would fail the next JailTest's TearDown.
  while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  // Not a subreaper: the churn's last child went to init and may still run.
  std::vector<pid_t> left = processes_with(marker);
  for (int i = 0; i < 100 && !left.empty(); ++i) {
    ::usleep(10000);
    left = processes_with(marker);
  }
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) with the marker left";
}

}  // namespace
}  // namespace brig::jail::test
