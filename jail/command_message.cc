#include "jail/command_message.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "jail/base/fd_message.h"
#include "jail/steps/exec.h"

namespace brig::jail::command {
namespace {

// The received command lives here: the child may not allocate, and the
// command (sharing the init's memory until its execve) reads it from here.
// In .bss, pages never touched cost nothing.
char g_bytes[kMaxBytes];
char* g_strings[kMaxStrings];

void append(std::string& out, const std::string& s) {
  out += s;
  out.push_back('\0');
}

}  // namespace

Result<Encoded> encode(const ExecRequest& request) {
  const std::vector<std::string> candidates = exec::path_candidates(request.argv[0], request.env);
  Encoded e;
  e.header.candidates = static_cast<std::uint32_t>(candidates.size());
  e.header.argc = static_cast<std::uint32_t>(request.argv.size());
  e.header.envc = static_cast<std::uint32_t>(request.env.size());
  // Three null terminators, and the cwd's string.
  const std::size_t pointers = candidates.size() + request.argv.size() + request.env.size() + 4;
  append(e.strings, request.cwd.empty() ? "/" : request.cwd);
  for (const auto& c : candidates) append(e.strings, c);
  for (const auto& a : request.argv) append(e.strings, a);
  for (const auto& v : request.env) append(e.strings, v);
  if (e.strings.size() > kMaxBytes || pointers > kMaxStrings)
    return std::unexpected(Error{"send the command to a jail built ahead", "",
                                 "the command's strings take " + std::to_string(e.strings.size()) +
                                     " bytes in " + std::to_string(pointers) +
                                     " pieces, over what it holds (" + std::to_string(kMaxBytes) +
                                     ", " + std::to_string(kMaxStrings) + ")",
                                 E2BIG});
  e.header.bytes = static_cast<std::uint32_t>(e.strings.size());
  return e;
}

int send(int socket, const Encoded& command, const int stdio[3]) {
  if (int e = send_with_fds(socket, &command.header, sizeof command.header, stdio, 3)) return e;
  std::size_t done = 0;
  while (done < command.strings.size()) {
    const ssize_t n =
        ::send(socket, command.strings.data() + done, command.strings.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

int receive_in_child(int socket, Received* out) {
  Header h;
  int fds[kMaxMessageFds];
  std::size_t nfds = 0;
  if (int e = receive_with_fds(socket, &h, sizeof h, fds, &nfds)) return e;
  const std::size_t pieces = std::size_t{h.candidates} + h.argc + h.envc + 4;
  if (nfds != 3 || h.bytes == 0 || h.bytes > kMaxBytes || pieces > kMaxStrings || h.argc == 0 ||
      h.candidates == 0) {
    for (std::size_t i = 0; i < nfds; ++i) ::close(fds[i]);
    return EPROTO;
  }
  for (int i = 0; i < 3; ++i) {
    if (fds[i] == i) {  // received at its place (stdio closed first), close-on-exec
      if (::fcntl(i, F_SETFD, 0) != 0) return errno;
      continue;
    }
    if (::dup2(fds[i], i) < 0) return errno;
    ::close(fds[i]);
  }
  std::size_t done = 0;
  while (done < h.bytes) {
    const ssize_t n = ::read(socket, g_bytes + done, h.bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EPROTO;  // cut short: the header promised more
    done += static_cast<std::size_t>(n);
  }
  if (g_bytes[h.bytes - 1] != '\0') return EPROTO;
  // Split into the arrays, each followed by its null terminator:
  // [cwd] [candidates..., 0] [argv..., 0] [env..., 0].
  const std::uint32_t counts[3] = {h.candidates, h.argc, h.envc};
  std::size_t at = 0;  // into g_bytes
  std::size_t slot = 0;
  auto next_string = [&]() -> char* {
    if (at >= h.bytes) return nullptr;
    char* s = g_bytes + at;
    while (g_bytes[at] != '\0') ++at;
    ++at;
    return s;
  };
  out->cwd = next_string();
  if (!out->cwd) return EPROTO;
  char* const* starts[3];
  for (int k = 0; k < 3; ++k) {
    starts[k] = g_strings + slot;
    for (std::uint32_t i = 0; i < counts[k]; ++i) {
      char* s = next_string();
      if (!s) return EPROTO;
      g_strings[slot++] = s;
    }
    g_strings[slot++] = nullptr;
  }
  if (at != h.bytes) return EPROTO;
  out->candidates = starts[0];
  out->argv = starts[1];
  out->envp = starts[2];
  return 0;
}

}  // namespace brig::jail::command
