// jail_probe: runs inside a jail and reports what it finds there, one
// "key=value" or plain line per fact, so tests can compare whole outputs.
// Each command does one thing and prints "err=<errno>" when it fails, in the
// spirit of bubblewrap's try-syscall.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

int err(const char* what) {
  std::cout << "err=" << strerrorname_np(errno) << " (" << what << ")\n";
  return 1;
}

std::vector<std::string> list_dir(const std::string& path, bool* ok) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  *ok = d != nullptr;
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// The lines of /proc/self/status a jail test cares about.
int status() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    for (const char* key :
         {"NoNewPrivs:", "Seccomp:", "CapEff:", "CapPrm:", "CapBnd:", "CapAmb:", "Groups:"})
      if (line.starts_with(key)) std::cout << line << "\n";
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::cout << "uid=" << getuid() << "\ngid=" << getgid() << "\npid=" << getpid()
            << "\nhostname=" << host << "\n";
  std::ifstream comm("/proc/1/comm");
  std::string c;
  std::getline(comm, c);
  std::cout << "pid1=" << c << "\n";
  return 0;
}

int fds() {
  bool ok = false;
  // opendir's own fd shows up in the listing; it is the highest one.
  auto entries = list_dir("/proc/self/fd", &ok);
  if (!ok) return err("opendir /proc/self/fd");
  std::vector<int> nums;
  for (const auto& e : entries) nums.push_back(atoi(e.c_str()));
  std::sort(nums.begin(), nums.end());
  if (!nums.empty()) nums.pop_back();
  for (int n : nums) std::cout << "fd=" << n << "\n";
  return 0;
}

int ifaces() {
  std::ifstream in("/proc/net/dev");
  std::string line;
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    ifreq ifr{};
    strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    const bool up = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP);
    std::cout << name << (up ? " up" : " down") << "\n";
  }
  return 0;
}

int write_file(const char* path) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return err("open");
  if (write(fd, "probe\n", 6) != 6) return err("write");
  close(fd);
  std::cout << "ok\n";
  return 0;
}

int read_file(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err("open");
  char buf[4096];
  ssize_t n;
  size_t total = 0;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    std::cout.write(buf, n);
    total += static_cast<size_t>(n);
  }
  if (n < 0) return err("read");
  std::cout << "bytes=" << total << "\n";
  return 0;
}

int ls(const char* path) {
  bool ok = false;
  auto entries = list_dir(path, &ok);
  if (!ok) return err("opendir");
  for (const auto& e : entries) std::cout << e << "\n";
  return 0;
}

int pids() {
  bool ok = false;
  for (const auto& e : list_dir("/proc", &ok))
    if (!e.empty() && std::all_of(e.begin(), e.end(), ::isdigit)) std::cout << e << "\n";
  return ok ? 0 : err("opendir /proc");
}

// Forks a child that sleeps as long as this process does: a grandchild of
// the init, which a timeout must kill too.
int fork_sleep(int seconds) {
  const pid_t p = fork();
  if (p < 0) return err("fork");
  if (p == 0) setsid();  // leaving the process group must not help it survive
  sleep(static_cast<unsigned>(seconds));
  return 0;
}

// Forks up to `n` children that wait for their parent to exit, then says
// how many forks succeeded and why the next one failed.
int forks(int n) {
  int ok = 0;
  int first_err = 0;
  for (int i = 0; i < n; ++i) {
    const pid_t p = fork();
    if (p == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      pause();
      _exit(0);
    }
    if (p < 0) {
      first_err = errno;
      break;
    }
    ++ok;
  }
  std::cout << "forked=" << ok;
  if (first_err) std::cout << " err=" << strerrorname_np(first_err);
  std::cout << "\n";
  return 0;
}

// Allocates and touches `mib` MiB, 1 MiB at a time.
int alloc(int mib) {
  int done = 0;
  for (; done < mib; ++done) {
    char* p = static_cast<char*>(malloc(1 << 20));
    if (!p) break;
    memset(p, 1, 1 << 20);
  }
  std::cout << "allocated=" << done << "\n";
  return done == mib ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: jail_probe status|env|fds|ifaces|write P|read P|ls D|pids|exit N|kill SIG|"
                 "sleep S|fork-sleep S [marker]|forks N|alloc MiB\n";
    return 2;
  }
  const std::string cmd = argv[1];
  const char* arg = argc > 2 ? argv[2] : "";
  if (cmd == "status") return status();
  if (cmd == "env") {
    for (char** e = environ; *e; ++e) std::cout << *e << "\n";
    return 0;
  }
  if (cmd == "fds") return fds();
  if (cmd == "ifaces") return ifaces();
  if (cmd == "write") return write_file(arg);
  if (cmd == "read") return read_file(arg);
  if (cmd == "ls") return ls(arg);
  if (cmd == "pids") return pids();
  if (cmd == "exit") return atoi(arg);
  if (cmd == "kill") {
    std::cout.flush();
    kill(getpid(), atoi(arg));
    pause();
  }
  if (cmd == "sleep") {
    std::cout << "sleeping\n" << std::flush;
    sleep(static_cast<unsigned>(atoi(arg)));
    return 0;
  }
  if (cmd == "fork-sleep") return fork_sleep(atoi(arg));
  if (cmd == "forks") return forks(atoi(arg));
  if (cmd == "alloc") return alloc(atoi(arg));
  std::cerr << "jail_probe: unknown command " << cmd << "\n";
  return 2;
}
