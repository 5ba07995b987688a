#include "tests/security/security_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <thread>

#include "jail/base/unique_fd.h"
#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"

namespace brig::security::test {
namespace {

using Clock = std::chrono::steady_clock;

// The host mount points a jail's setup could leave behind if its mounts
// propagated out of its mount namespace: the scratch tmpfs brig mounts over
// one of /tmp, /mnt, /run, /var/tmp before pivot_root, and anything at or
// under `dirs` (the test's workspace and home). One entry per mount, so
// stacked mounts count.
std::vector<std::string> watched_mounts(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "id parent major:minor root mount-point ...": the fifth field.
    size_t at = 0;
    for (int field = 0; field < 4 && at != std::string::npos; ++field) at = line.find(' ', at + 1);
    if (at == std::string::npos) continue;
    const std::string point = line.substr(at + 1, line.find(' ', at + 1) - at - 1);
    bool watched = point == "/tmp" || point == "/mnt" || point == "/run" || point == "/var/tmp";
    for (const std::string& dir : dirs)
      watched = watched || point == dir || point.starts_with(dir + "/");
    if (watched) out.push_back(point);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// This process's children (of every thread), from /proc.
std::vector<pid_t> our_children() {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
    pid_t c;
    while (in >> c) out.push_back(c);
  }
  ::closedir(d);
  return out;
}

}  // namespace

void SecurityTest::SetUp() {
  JailTest::SetUp();
  ASSERT_FALSE(home_.path().empty());
  ASSERT_FALSE(policies_.path().empty());
  std::error_code ec;
  std::filesystem::copy_file(jail::test::bin_dir() + "/jail_probe", probe_path(), ec);
  ASSERT_FALSE(ec) << "copying jail_probe into the workspace: " << ec.message();
  ASSERT_EQ(::chmod(probe_path().c_str(), 0755), 0);
  mounts_before_ = watched_mounts({workspace(), home()});
}

void SecurityTest::TearDown() {
  JailTest::TearDown();  // no child, no process with marker(), no cgroup of ours
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  auto leftovers = [&] {
    std::vector<std::string> left;
    for (pid_t pid : brig_pids_)
      for (auto& g : jail::test::our_cgroups(pid)) left.push_back("cgroup " + g);
    const std::vector<std::string> now = watched_mounts({workspace(), home()});
    std::vector<std::string> added;
    std::set_difference(now.begin(), now.end(), mounts_before_.begin(), mounts_before_.end(),
                        std::back_inserter(added));
    for (auto& m : added) left.push_back("mount " + m);
    return left;
  };
  std::vector<std::string> left = leftovers();
  while (!left.empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = leftovers();
  }
  for (const auto& l : left) ADD_FAILURE() << "left behind: " << l;
}

std::vector<std::string> SecurityTest::probe(std::vector<std::string> args) const {
  args.insert(args.begin(), probe_path());
  args.push_back(marker());
  return args;
}

Planned SecurityTest::plan(const std::string& policy, std::vector<std::string> args) const {
  Planned planned;
  const policy::EnvMap env = {{"PATH", "/usr/bin:/bin"}, {"HOME", home()}};
  auto loaded = policy::load_policy(policy, policy::Expansion{home(), env});
  if (!loaded) {
    for (const auto& e : loaded.error()) ADD_FAILURE() << policy << ": " << e.to_string();
    return planned;
  }
  const policy::Context ctx = policy::caller_context(workspace(), workspace(), env, home());
  auto spec = policy::to_jail_spec(loaded->policy, ctx);
  if (!spec) {
    ADD_FAILURE() << policy << ": " << spec.error().to_string();
    return planned;
  }
  planned.spec = std::move(*spec);
  planned.request = policy::exec_request(loaded->policy, ctx, probe(std::move(args)));
  return planned;
}

BrigRan SecurityTest::brig_run(const std::vector<std::string>& args,
                               const std::vector<std::string>& env) {
  UniqueFd out(::memfd_create("brig-stdout", MFD_CLOEXEC));
  UniqueFd err(::memfd_create("brig-stderr", MFD_CLOEXEC));
  std::vector<std::string> argv = {jail::test::bin_dir() + "/brig", "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> envv = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home()};
  envv.insert(envv.end(), env.begin(), env.end());
  // Built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : envv) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const std::string& cwd = workspace();

  BrigRan ran;
  const std::vector<pid_t> before = our_children();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << ::strerror(errno);
    return ran;
  }
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDONLY);
    if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(out.get(), 1) < 0 || ::dup2(err.get(), 2) < 0 ||
        ::chdir(cwd.c_str()) != 0)
      ::_exit(120);
    if (null > 2) ::close(null);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(121);
  }
  brig_pids_.push_back(pid);
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  int st = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &st, WNOHANG)) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (done == 0) {
    ADD_FAILURE() << "brig run did not end in 120 s";
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  } else if (WIFEXITED(st)) {
    ran.status = WEXITSTATUS(st);
  }
  // brig run returns once the jail's init reports the command's status and
  // leaves the init to exit by itself: orphaned, it comes to this process
  // (a subreaper), reaped here so that TearDown still finds no child left.
  // brig was reaped, so its children are this process's children already.
  for (pid_t c : our_children()) {
    if (std::find(before.begin(), before.end(), c) != before.end()) continue;
    while ((done = ::waitpid(c, &st, WNOHANG)) == 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (done == 0) ADD_FAILURE() << "the jail's init " << c << " did not exit";
  }
  ran.out = jail::test::slurp(out.get());
  ran.err = jail::test::slurp(err.get());
  return ran;
}

std::string SecurityTest::policy_file(const std::string& name, const std::string& toml) {
  const std::string path = policies_.path() + "/" + name + ".toml";
  std::ofstream(path) << toml;
  return path;
}

JailSpec without(JailSpec spec, jail::Layer layer) {
  switch (layer) {
    case jail::Layer::seccomp:
      spec.seccomp.enabled = false;
      break;
    case jail::Layer::landlock:
      spec.landlock.enabled = false;
      break;
    default:
      ADD_FAILURE() << "without(): only seccomp and landlock switch off as a whole";
  }
  std::erase(spec.required, layer);
  return spec;
}

JailSpec with_host_pids(JailSpec spec) {
  spec.namespaces.pid = false;
  for (jail::Mount& m : spec.mounts) {
    if (m.kind != jail::Mount::Kind::proc) continue;
    m.kind = jail::Mount::Kind::bind;
    m.source = "/proc";
  }
  return spec;
}

JailSpec with_host_network(JailSpec spec) {
  spec.namespaces.net = false;
  spec.network = jail::NetworkMode::dangerously_host;
  return spec;
}

HostSleeper::HostSleeper() {
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
    ::_exit(127);
  }
}

bool HostSleeper::alive() {
  if (status_ != -1 || pid_ <= 0) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) status_ = st;
  return status_ == -1;
}

HostSleeper::~HostSleeper() {
  if (!alive()) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

size_t count_processes_with(const std::string& needle) {
  return jail::test::processes_with(needle).size();
}

bool can_fork() {
  const pid_t p = ::fork();
  if (p < 0) return false;
  if (p == 0) ::_exit(0);
  int st = 0;
  return ::waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int ms_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, left.count()));
}

}  // namespace brig::security::test
