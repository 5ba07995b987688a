#include "tests/server/search/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace brig::search::testing {

CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::string& input) {
  CommandResult r;
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return r;
  if (::pipe2(out, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  ::posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  ::posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    return r;
  }
  // Feed stdin and drain stdout together so neither pipe fills up.
  std::size_t written = 0;
  bool in_open = true;
  if (input.empty()) {
    ::close(in[1]);
    in_open = false;
  }
  char buf[65536];
  while (true) {
    pollfd fds[2] = {{out[0], POLLIN, 0}, {in_open ? in[1] : -1, POLLOUT, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (in_open && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n = ::write(in[1], input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if (n < 0 || written == input.size()) {
        ::close(in[1]);
        in_open = false;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      r.out.append(buf, static_cast<std::size_t>(n));
    }
  }
  if (in_open) ::close(in[1]);
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool have_program(const std::string& name) {
  for (const char* dir : {"/usr/bin/", "/bin/", "/usr/local/bin/"})
    if (::access((std::string(dir) + name).c_str(), X_OK) == 0) return true;
  return false;
}

}  // namespace brig::search::testing
