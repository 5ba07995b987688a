#include "tests/jail/jail_test_support.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "jail/base/unique_fd.h"

namespace brig::jail::test {

std::string bin_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return exe.substr(0, exe.rfind('/'));
}

JailSpec base_spec(const std::string& workspace) {
  JailSpec s;
  s.hostname = "brig-test";
  s.identity = {::getuid(), ::getgid(), ::getuid(), ::getgid()};
  auto bind = [&](const std::string& path, bool writable, bool optional = false) {
    Mount m;
    m.kind = Mount::Kind::bind;
    m.source = m.target = path;
    m.writable = writable;
    m.optional = optional;
    s.mounts.push_back(m);
  };
  for (const char* p : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"}) bind(p, false, true);
  Mount proc;
  proc.kind = Mount::Kind::proc;
  proc.target = "/proc";
  s.mounts.push_back(proc);
  Mount dev;
  dev.kind = Mount::Kind::dev;
  dev.target = "/dev";
  s.mounts.push_back(dev);
  Mount tmp;
  tmp.kind = Mount::Kind::tmpfs;
  tmp.target = "/tmp";
  tmp.writable = true;
  tmp.mode = 01777;
  tmp.size_bytes = 16 << 20;
  s.mounts.push_back(tmp);
  bind(bin_dir(), false);
  bind(workspace, true);
  s.landlock.read_only = {"/usr", "/bin",  "/sbin", "/lib",   "/lib64",
                          "/etc", "/proc", "/dev",  bin_dir()};
  s.landlock.read_write = {"/tmp", workspace};
  return s;
}

ExecRequest probe_request(std::vector<std::string> args) {
  ExecRequest r;
  r.argv.push_back(bin_dir() + "/jail_probe");
  for (auto& a : args) r.argv.push_back(std::move(a));
  r.env = {"PATH=/usr/bin:/bin", "LANG=C"};
  return r;
}

std::string slurp(int fd) {
  std::string s;
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

Ran run_jail(const JailSpec& spec, ExecRequest request) {
  UniqueFd out(::memfd_create("jail-stdout", MFD_CLOEXEC));
  UniqueFd err(::memfd_create("jail-stderr", MFD_CLOEXEC));
  request.stdout_fd = out.get();
  request.stderr_fd = err.get();
  Ran ran;
  auto jailed = spawn(spec, request);
  if (!jailed) {
    ADD_FAILURE() << "spawn: " << jailed.error().to_string();
    ran.outcome = setup_failed_outcome(jailed.error().step, jailed.error().sys_errno,
                                       jailed.error().to_string());
    return ran;
  }
  return wait_and_collect(*jailed, out.get(), err.get());
}

Ran wait_and_collect(RunningJail& jailed, int out, int err) {
  Ran ran;
  auto outcome = wait(jailed, std::chrono::steady_clock::now() + std::chrono::seconds(60));
  if (!outcome) {
    ADD_FAILURE() << "wait: " << outcome.error().to_string();
    return ran;
  }
  ran.outcome = std::move(*outcome);
  ran.out = slurp(out);
  ran.err = slurp(err);
  return ran;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/brig-jail-test.XXXXXX";
  const char* p = ::mkdtemp(tmpl);
  if (p) {
    path_ = p;
    ::chmod(p, 0755);
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::vector<pid_t> processes_with(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  // Without exceptions or early returns, so the directory is always closed.
  while (const dirent* e = ::readdir(d)) {
    const pid_t pid = static_cast<pid_t>(::atoi(e->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    // A process that exits meanwhile fails to open or reads ESRCH (a zombie
    // reads as empty): it is not left, so it does not count.
    UniqueFd fd(
        ::open((std::string("/proc/") + e->d_name + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) continue;
    std::string cmdline;
    char buf[4096];
    ssize_t got;
    while ((got = ::read(fd.get(), buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR))
      if (got > 0) cmdline.append(buf, static_cast<size_t>(got));
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

std::vector<std::string> our_cgroups(pid_t pid) {
  std::vector<std::string> out;
  const std::string prefix = std::to_string(pid ? pid : ::getpid()) + "-";
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    const std::string ctrls = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    std::string root;
    if (ctrls == "pids")
      root = "/sys/fs/cgroup/pids";
    else if (ctrls == "memory")
      root = "/sys/fs/cgroup/memory";
    else if (ctrls.empty())
      root = "/sys/fs/cgroup/unified";
    else
      continue;
    const std::string dir = root + (path == "/" ? "" : path) + "/brig";
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).starts_with(prefix)) out.push_back(dir + "/" + e->d_name);
    ::closedir(d);
  }
  return out;
}

void JailTest::SetUp() {
  ASSERT_FALSE(workspace_.path().empty()) << "mkdtemp failed";
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  marker_ = std::string("brig-marker-") + info->name() + "-" + std::to_string(::getpid());
}

void JailTest::TearDown() {
  // Other work shares the machine: poll to a generous deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::vector<pid_t> stray;
  std::vector<std::string> groups;
  bool child_left = false;
  do {
    int st;
    const pid_t p = ::waitpid(-1, &st, WNOHANG);
    // A zombie reaped here is a process the launcher failed to reap.
    if (p > 0) ADD_FAILURE() << "reaped a stray child " << p << " the launcher left";
    child_left = p != -1;  // -1/ECHILD: no child of ours, living or zombie
    stray = processes_with(marker_);
    groups = our_cgroups();
    if (!child_left && stray.empty() && groups.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_FALSE(child_left) << "a child process of the test is left";
  EXPECT_TRUE(stray.empty()) << stray.size() << " process(es) with " << marker_ << " left";
  for (const auto& g : groups) ADD_FAILURE() << "cgroup left: " << g;
}

}  // namespace brig::jail::test
