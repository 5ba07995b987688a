// jail_probe: runs inside a jail and reports what it finds there, one
// "key=value" or plain line per fact, so tests can compare whole outputs.
// Each command does one thing and prints "err=<errno>" when it fails, in the
// spirit of bubblewrap's try-syscall.
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
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
  // The listing's own fd is left out by number: it is the lowest free fd,
  // not the highest, when the caller handed over a high one.
  DIR* d = opendir("/proc/self/fd");
  if (!d) return err("opendir /proc/self/fd");
  std::vector<int> nums;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != ".." && atoi(n.c_str()) != dirfd(d)) nums.push_back(atoi(n.c_str()));
  }
  closedir(d);
  std::sort(nums.begin(), nums.end());
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

// The escape attempts of tests/security: each prints "<attempt>=ok" or
// "<attempt>=<errno name>", so a test can compare the whole output.
int report(const char* attempt, int rc) {
  std::cout << attempt << "=" << (rc < 0 ? strerrorname_np(errno) : "ok") << "\n";
  return rc < 0 ? 1 : 0;
}

// Gaining capabilities the usual way: a nested user namespace (with mount and
// network namespaces it owns) gives its creator every capability in it. Then
// runs `rest` as a command, so that e.g. "userns mount /tmp" mounts with them.
int dispatch(int argc, char** argv);
int in_userns(int argc, char** argv) {
  report("unshare", unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET));
  return argc > 0 ? dispatch(argc, argv) : 0;
}

// A tmpfs over `dir` with mount(2), then the new mount API's fsopen.
int mount_tmpfs(const char* dir) {
  int rc = report("mount", mount("tmpfs", dir, "tmpfs", 0, nullptr));
  const int fs = static_cast<int>(syscall(SYS_fsopen, "tmpfs", 0));
  rc |= report("fsopen", fs);
  if (fs >= 0) close(fs);
  return rc;
}

// Attaches to and reads the memory of a child of its own, which needs no
// capability: only seccomp stands in the way.
int ptrace_child() {
  const pid_t child = fork();
  if (child < 0) return err("fork");
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    pause();
    _exit(0);
  }
  int rc = report("ptrace", static_cast<int>(ptrace(PTRACE_SEIZE, child, 0, 0)));
  static char word[8] = "secret";
  char got[sizeof word] = {};
  iovec local{got, sizeof got}, remote{word, sizeof word};
  rc |= report("process_vm_readv",
               static_cast<int>(process_vm_readv(child, &local, 1, &remote, 1, 0)));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return rc;
}

int connect_tcp(int port) {
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return report("socket", s);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = report("connect", connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a));
  close(s);
  return rc;
}

// Sends `msg` to 127.0.0.1:port (TCP: then half-closes) and prints the reply
// as "reply=<text>": a listener served from outside the jail answers.
int talk(bool tcp, int port, const char* msg) {
  const int s = socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
  if (s < 0) return report("socket", s);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return report("connect", -1);
  if (send(s, msg, strlen(msg), 0) < 0) return report("send", -1);
  if (tcp) shutdown(s, SHUT_WR);
  std::string reply;
  char buf[256];
  for (ssize_t n; (n = recv(s, buf, sizeof buf, 0)) > 0;) {
    reply.append(buf, static_cast<size_t>(n));
    if (!tcp) break;
  }
  close(s);
  std::cout << "reply=" << reply << "\n";
  return 0;
}

// `name` without the leading NUL of the abstract namespace.
int connect_abstract(const char* name) {
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return report("socket", s);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const size_t n = std::min(strlen(name), sizeof a.sun_path - 1);
  memcpy(a.sun_path + 1, name, n);
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  const int rc = report("connect", connect(s, reinterpret_cast<sockaddr*>(&a), len));
  close(s);
  return rc;
}

int raw_sockets() {
  struct Kind {
    const char* name;
    int family, type, protocol;
  };
  int rc = 0;
  for (const Kind& k :
       {Kind{"raw", AF_INET, SOCK_RAW, IPPROTO_ICMP}, Kind{"packet", AF_PACKET, SOCK_RAW, 0}}) {
    const int s = socket(k.family, k.type | SOCK_CLOEXEC, k.protocol);
    rc |= report(k.name, s);
    if (s >= 0) close(s);
  }
  return rc;
}

// Pushes a byte into the input of the terminal on fd 0, as an attacker does
// to have the user's shell run a command once the jail ends (the terminal
// echoes it: the test reads it back on its master side). TIOCSTI needs the
// terminal to be the caller's controlling one, so a child makes it so.
int tiocsti() {
  std::cout << std::flush;
  const pid_t child = fork();
  if (child < 0) return err("fork");
  if (child == 0) {
    setsid();
    report("ctty", ioctl(0, TIOCSCTTY, 0));
    const char c = 'x';
    report("tiocsti", ioctl(0, TIOCSTI, &c));
    std::cout << std::flush;
    _exit(0);
  }
  int st = 0;
  waitpid(child, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

// Tries every way to leave a setuid/setgid file in `dir`: chmod and fchmod
// of a plain file, open(O_CREAT) and mknod with the bits. The host then
// looks at the files' modes.
int setuid_files(const std::string& dir) {
  umask(0);
  const std::string plain = dir + "/plain";
  const int fd = open(plain.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (fd < 0) return err("open plain");
  int rc = report("chmod", chmod(plain.c_str(), 04755));
  rc |= report("fchmod", fchmod(fd, 02755));
  rc |= report("fchmodat", fchmodat(AT_FDCWD, plain.c_str(), 06755, 0));
  close(fd);
  const int made = open((dir + "/created").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 06755);
  rc |= report("open", made);
  if (made >= 0) close(made);
  rc |= report("mknod", mknod((dir + "/node").c_str(), S_IFREG | 04755, 0));
  return rc;
}

// Writes `path` 1 MiB at a time, up to `max_mib`, and says how far it got.
int fill(const char* path, int max_mib) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return err("open");
  static char chunk[1 << 20];
  memset(chunk, 'f', sizeof chunk);
  int mib = 0;
  int first_err = 0;
  for (; mib < max_mib; ++mib) {
    size_t off = 0;
    while (off < sizeof chunk) {
      const ssize_t n = write(fd, chunk + off, sizeof chunk - off);
      if (n <= 0) {
        first_err = n < 0 ? errno : ENOSPC;
        break;
      }
      off += static_cast<size_t>(n);
    }
    if (first_err) break;
  }
  close(fd);
  std::cout << "written=" << mib;
  if (first_err) std::cout << " err=" << strerrorname_np(first_err);
  std::cout << "\n";
  return 0;
}

// Burns CPU until this process has used `seconds` of it, then says so: only
// a CPU-time limit stops it early.
int spin(int seconds) {
  timespec used{};
  do {
    // The empty asm keeps the compiler from removing the loop.
    for (unsigned i = 0; i < 1000000; ++i) asm volatile("" : : "r"(i));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &used);
  } while (used.tv_sec < seconds);
  std::cout << "spun=" << seconds << "\n";
  return 0;
}

// Opens /dev/null up to `n` times, keeping every fd, and says how many opens
// succeeded and why the next one failed.
int open_files(int n) {
  int opened = 0;
  int first_err = 0;
  for (; opened < n; ++opened)
    if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0) {
      first_err = errno;
      break;
    }
  std::cout << "opened=" << opened;
  if (first_err) std::cout << " err=" << strerrorname_np(first_err);
  std::cout << "\n";
  return 0;
}

// How many processes in /proc are zombies (state Z).
int count_zombies() {
  int zombies = 0;
  bool ok = false;
  for (const auto& e : list_dir("/proc", &ok)) {
    if (e.empty() || !std::all_of(e.begin(), e.end(), ::isdigit)) continue;
    std::ifstream stat("/proc/" + e + "/stat");
    std::string line;
    std::getline(stat, line);
    // "pid (comm) S ...": comm may hold spaces and parentheses, the state
    // follows the last ')'.
    const size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z') ++zombies;
  }
  return zombies;
}

// Waits up to 20 s for `pred`, polling every 10 ms; other work shares the
// machine, so the deadline is generous.
template <typename Pred>
bool poll_until(Pred pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    usleep(10000);
  }
  return pred();
}

// Leaves an orphan for the jail's init to reap: a child forks a grandchild
// and exits; the grandchild waits until it is the init's (its parent is
// gone), says its pid and exits. First, as a control that the count sees
// zombies at all, one child of its own is left unreaped for a moment.
int orphan() {
  const pid_t own = fork();
  if (own < 0) return err("fork");
  if (own == 0) _exit(0);
  std::cout << "own_zombie_seen=" << poll_until([] { return count_zombies() > 0; }) << "\n";
  waitpid(own, nullptr, 0);

  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return err("pipe2");
  const pid_t middle = fork();
  if (middle < 0) return err("fork");
  if (middle == 0) {
    const pid_t grandchild = fork();
    if (grandchild < 0) _exit(1);
    if (grandchild == 0) {
      // getppid() reads 1 once the middle child is gone and the jail's
      // init, pid 1 of this pid namespace, has adopted it.
      poll_until([] { return getppid() == 1; });
      // One write, so the reader gets both ids in one read.
      const pid_t ids[2] = {getpid(), getppid()};
      [[maybe_unused]] auto n = write(pipefd[1], ids, sizeof ids);
      _exit(0);
    }
    _exit(0);
  }
  close(pipefd[1]);
  waitpid(middle, nullptr, 0);
  pid_t ids[2] = {0, 0};
  if (read(pipefd[0], ids, sizeof ids) != static_cast<ssize_t>(sizeof ids)) return err("read");
  close(pipefd[0]);
  std::cout << "orphan_ppid=" << ids[1] << "\n";
  // Gone from /proc once reaped; a zombie stays until its parent waits.
  const std::string proc = "/proc/" + std::to_string(ids[0]);
  const bool reaped = poll_until([&] { return access(proc.c_str(), F_OK) != 0; });
  std::cout << "orphan=" << (reaped ? "reaped" : "left") << "\nzombies=" << count_zombies() << "\n";
  return 0;
}

// Forks without end, in every process, retrying when fork fails: only a
// limit on processes can hold it, and only a kill can end it.
[[noreturn]] void fork_bomb() {
  signal(SIGXFSZ, SIG_IGN);
  for (;;) {
    if (fork() < 0) usleep(1000);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return dispatch(argc - 1, argv + 1);
}

namespace {

// argv[0] is the command.
int dispatch(int argc, char** argv) {
  if (argc < 1) {
    std::cerr << "usage: jail_probe status|env|fds|ifaces|write P|read P|ls D|pids|exit N|kill SIG|"
                 "sleep S|fork-sleep S [marker]|forks N|alloc MiB|userns CMD...|mount D|ptrace|"
                 "signal PID SIG|connect-tcp PORT|talk-tcp PORT MSG|talk-udp PORT MSG|"
                 "connect-abstract NAME|raw-sockets|tiocsti|"
                 "setuid-files D|fill P MiB|fork-bomb|spin S|open-files N|orphan|"
                 "ignoring SIG CMD...\n";
    return 2;
  }
  const std::string cmd = argv[0];
  const char* arg = argc > 1 ? argv[1] : "";
  const char* arg2 = argc > 2 ? argv[2] : "";
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
  if (cmd == "userns") return in_userns(argc - 1, argv + 1);
  if (cmd == "mount") return mount_tmpfs(arg);
  if (cmd == "ptrace") return ptrace_child();
  if (cmd == "signal") return report("kill", kill(atoi(arg), atoi(arg2)));
  if (cmd == "connect-tcp") return connect_tcp(atoi(arg));
  if (cmd == "connect-abstract") return connect_abstract(arg);
  if (cmd == "talk-tcp") return talk(true, atoi(arg), arg2);
  if (cmd == "talk-udp") return talk(false, atoi(arg), arg2);
  if (cmd == "raw-sockets") return raw_sockets();
  if (cmd == "tiocsti") return tiocsti();
  if (cmd == "setuid-files") return setuid_files(arg);
  if (cmd == "fill") return fill(arg, atoi(arg2));
  if (cmd == "fork-bomb") fork_bomb();
  if (cmd == "spin") return spin(atoi(arg));
  if (cmd == "open-files") return open_files(atoi(arg));
  if (cmd == "orphan") return orphan();
  if (cmd == "ignoring") {
    // Runs the rest as a command with signal `arg` ignored, e.g. to see the
    // errno a limit gives instead of the signal that comes with it.
    signal(atoi(arg), SIG_IGN);
    return dispatch(argc - 2, argv + 2);
  }
  std::cerr << "jail_probe: unknown command " << cmd << "\n";
  return 2;
}

}  // namespace
