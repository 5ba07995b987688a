#include "tests/bench/bwrap_peer.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "jail/steps/seccomp.h"
#include "server/policy/caller.h"
#include "server/policy/loader.h"
#include "server/policy/to_jail_spec.h"

extern char** environ;

namespace brig::bench {
namespace {

namespace policy = brig::policy;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "bwrap peer: %s\n", why.c_str());
  std::exit(1);
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Planned plan_default(const std::string& workspace, std::vector<std::string> argv) {
  policy::EnvMap env = policy::current_environment();
  const std::string home = policy::caller_home(env);
  auto loaded = policy::load_policy("default", policy::Expansion{home, env});
  if (!loaded) die("loading the default policy: " + loaded.error().front().to_string());
  const policy::Context ctx = policy::caller_context(workspace, workspace, env, home);
  auto spec = policy::to_jail_spec(loaded->policy, ctx);
  if (!spec) die("planning the default policy: " + spec.error().to_string());
  return {std::move(*spec), policy::exec_request(loaded->policy, ctx, std::move(argv))};
}

std::vector<std::string> bwrap_args(const std::string& bwrap, const Planned& p,
                                    std::vector<std::string> command) {
  std::vector<std::string> a = {
      bwrap,           "--unshare-user",   "--unshare-ipc",     "--unshare-pid", "--unshare-uts",
      "--unshare-net", "--unshare-cgroup", "--die-with-parent", "--cap-drop",    "ALL",
      "--hostname",    p.spec.hostname};
  for (const jail::Mount& m : p.spec.mounts) {
    switch (m.kind) {
      case jail::Mount::Kind::bind:
        a.insert(a.end(), {m.writable ? (m.optional ? "--bind-try" : "--bind")
                                      : (m.optional ? "--ro-bind-try" : "--ro-bind"),
                           m.source, m.target});
        break;
      case jail::Mount::Kind::tmpfs: {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(m.mode));
        a.insert(a.end(), {"--perms", mode});
        if (m.size_bytes) a.insert(a.end(), {"--size", std::to_string(m.size_bytes)});
        a.insert(a.end(), {"--tmpfs", m.target});
        if (!m.writable) a.insert(a.end(), {"--remount-ro", m.target});
        break;
      }
      case jail::Mount::Kind::git:
        // bwrap has no equivalent of brig's git layer (an overlay and a few
        // binds): the read-only .git brig falls back to is the nearest.
        a.insert(a.end(), {"--ro-bind-try", m.target, m.target});
        break;
      case jail::Mount::Kind::proc:
        a.insert(a.end(), {"--proc", m.target});
        break;
      case jail::Mount::Kind::dev:
        a.insert(a.end(), {"--dev", m.target});
        break;
      case jail::Mount::Kind::mask:
        if (::access(m.target.c_str(), F_OK) != 0) break;  // brig skips these too
        if (is_dir(m.target))
          a.insert(a.end(), {"--tmpfs", m.target, "--remount-ro", m.target});
        else
          a.insert(a.end(), {"--ro-bind", "/dev/null", m.target});
        break;
      case jail::Mount::Kind::file:
        // Proxy mode's resolv.conf: the peer has no egress relay to name
        // either, and the default policy plans none.
        break;
    }
  }
  a.push_back("--clearenv");
  for (const std::string& kv : p.request.env) {
    const size_t eq = kv.find('=');
    a.insert(a.end(), {"--setenv", kv.substr(0, eq), kv.substr(eq + 1)});
  }
  a.insert(a.end(), {"--chdir", p.request.cwd.empty() ? "/" : p.request.cwd});
  a.insert(a.end(), {"--add-seccomp-fd", "3", "--add-seccomp-fd", "4", "--"});
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

std::vector<int> seccomp_fds() {
  auto prepared = jail::seccomp::prepare(jail::SeccompSpec{});
  if (!prepared) die("seccomp: " + prepared.error().to_string());
  std::vector<int> fds;
  for (const auto* program : {&prepared->syscalls, &prepared->arguments}) {
    const int memfd = ::memfd_create("brig-seccomp", MFD_CLOEXEC);
    const size_t bytes = program->size() * sizeof(sock_filter);
    if (memfd < 0 || ::write(memfd, program->data(), bytes) != static_cast<ssize_t>(bytes))
      die("writing the seccomp program");
    fds.push_back(::fcntl(memfd, F_DUPFD_CLOEXEC, 10));
    ::close(memfd);
  }
  return fds;
}

pid_t start(const Command& c) {
  for (int fd : c.pass_fds) ::lseek(fd, 0, SEEK_SET);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (c.quiet) {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  for (size_t i = 0; i < c.pass_fds.size(); ++i)
    posix_spawn_file_actions_adddup2(&fa, c.pass_fds[i], 3 + static_cast<int>(i));
  if (!c.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, c.cwd.c_str());
  std::vector<char*> argv;
  for (const auto& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) die(c.argv[0] + ": " + std::strerror(rc));
  return pid;
}

int finish(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace brig::bench
