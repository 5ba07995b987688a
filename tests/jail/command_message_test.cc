// The command a jail built ahead waits for (jail/command_message.h): "none
// sent" (the launcher dropped the jail unused: a silent exit) must never be
// confused with a message cut short, which the jail reports as a failed step.
#include "jail/command_message.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "jail/base/fd_message.h"
#include "jail/base/unique_fd.h"
#include "jail/spec.h"
#include "jail/steps/process.h"
#include "jail/steps/seccomp.h"

namespace brig::jail::command {
namespace {

class CommandMessage : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    launcher_.reset(sv[0]);
    child_.reset(sv[1]);
    // receive_in_child puts the three fds on 0, 1 and 2: keep this
    // process's own and put them back after each receive.
    for (int fd = 0; fd < 3; ++fd) saved_[fd] = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  }
  void TearDown() override {
    for (int fd = 0; fd < 3; ++fd) {
      ::dup2(saved_[fd], fd);
      ::close(saved_[fd]);
    }
  }

  // The first `cut` bytes of what command::send sends for `argv` (all of
  // it for npos; the fds go with the header), then the launcher's end shut.
  void send_then_close(std::size_t cut = std::string::npos) {
    ExecRequest request;
    request.argv = {"/bin/true"};
    request.cwd = "/";
    auto encoded = encode(request);
    ASSERT_TRUE(encoded) << encoded.error().to_string();
    const Header& h = encoded->header;
    const int stdio[3] = {saved_[0], saved_[1], saved_[2]};
    if (cut >= sizeof h) {
      ASSERT_EQ(send_with_fds(launcher_.get(), &h, sizeof h, stdio, 3), 0);
      const std::string body = encoded->strings.substr(0, cut - sizeof h);
      if (!body.empty()) {
        ASSERT_EQ(::write(launcher_.get(), body.data(), body.size()),
                  static_cast<ssize_t>(body.size()));
      }
    } else {
      ASSERT_EQ(send_with_fds(launcher_.get(), &h, cut, stdio, 3), 0);
    }
    launcher_.reset();
  }

  int receive() {
    Received got;
    return receive_in_child(child_.get(), &got);
  }

  UniqueFd launcher_, child_;
  int saved_[3] = {-1, -1, -1};
};

TEST_F(CommandMessage, AWholeCommandIsReceived) {
  send_then_close();
  EXPECT_EQ(receive(), 0);
}

TEST_F(CommandMessage, NoneSentIsTheSilentCase) {
  launcher_.reset();
  EXPECT_EQ(receive(), EPIPE);
}

TEST_F(CommandMessage, AHeaderCutShortIsAProtocolError) {
  send_then_close(sizeof(Header) / 2);
  EXPECT_EQ(receive(), EPROTO);
}

TEST_F(CommandMessage, StringsCutShortAreAProtocolError) {
  send_then_close(sizeof(Header) + 3);
  EXPECT_EQ(receive(), EPROTO);
}

// A header that comes in two pieces, the fds with the first: the kernel ends
// a MSG_WAITALL read after a piece with fds, so the rest comes from the
// recv loop (fd_message.h), and the command must still be received whole.
// Sends the pieces from `sock`: the header split at `split`, then the strings.
void send_split(int sock, std::size_t split, const int stdio[3]) {
  ExecRequest request;
  request.argv = {"/bin/true", "arg"};
  request.cwd = "/";
  auto encoded = encode(request);
  ASSERT_TRUE(encoded) << encoded.error().to_string();
  const Header& h = encoded->header;
  ASSERT_EQ(send_with_fds(sock, &h, split, stdio, 3), 0);
  const char* rest = reinterpret_cast<const char*>(&h) + split;
  ASSERT_EQ(::send(sock, rest, sizeof h - split, MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof h - split));
  ASSERT_EQ(::send(sock, encoded->strings.data(), encoded->strings.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(encoded->strings.size()));
}

TEST_F(CommandMessage, AHeaderInTwoPiecesIsReceivedWhole) {
  const int stdio[3] = {saved_[0], saved_[1], saved_[2]};
  send_split(launcher_.get(), sizeof(Header) / 2, stdio);
  Received got;
  ASSERT_EQ(receive_in_child(child_.get(), &got), 0);
  ASSERT_NE(got.argv, nullptr);
  EXPECT_STREQ(got.argv[0], "/bin/true");
  EXPECT_STREQ(got.argv[1], "arg");
}

// As a pooled jail's waiting command does it (jail/contain.cc run_command):
// the binary's read-only pages released, the filter installed from the
// programs in .rodata (seccomp::Prepared's spans), then the command read
// under the filter, its header in two pieces (the recv loop's syscall).
TEST(CommandMessageUnderSeccomp, ReceivedAfterReleaseAndFilter) {
  SeccompSpec spec;
  spec.enabled = true;
  auto prepared = seccomp::prepare(spec);
  ASSERT_TRUE(prepared);
  ASSERT_FALSE(prepared->syscalls.empty());
  const std::vector<sock_filter> syscalls(prepared->syscalls.begin(), prepared->syscalls.end());
  const std::vector<sock_filter> arguments(prepared->arguments.begin(), prepared->arguments.end());
  const auto pages = process::code_pages();
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(sv[0]);
    process::release_code_pages(pages);
    // What the filter is made of, read again from the file after the release.
    if (prepared->syscalls.size() != syscalls.size() ||
        ::memcmp(prepared->syscalls.data(), syscalls.data(),
                 syscalls.size() * sizeof(sock_filter)) != 0 ||
        prepared->arguments.size() != arguments.size() ||
        ::memcmp(prepared->arguments.data(), arguments.data(),
                 arguments.size() * sizeof(sock_filter)) != 0)
      ::_exit(2);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(3);
    if (seccomp::apply_in_child(*prepared) != 0) ::_exit(4);
    // The filter is on: a refused call fails as the profile says.
    if (::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0) >= 0 || errno != EAFNOSUPPORT) ::_exit(5);
    for (int fd = 0; fd < 3; ++fd) ::close(fd);
    Received got;
    const int e = receive_in_child(sv[1], &got);
    ::_exit(e == 0 && got.argv && ::strcmp(got.argv[1], "arg") == 0 ? 0 : 6);
  }
  ::close(sv[1]);
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  const int stdio[3] = {null.get(), null.get(), null.get()};
  send_split(sv[0], sizeof(Header) / 2, stdio);
  ::close(sv[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: program changed by the release, 3-4: install, "
                                       "5: filter not in force, 6: receive failed";
}

}  // namespace
}  // namespace brig::jail::command
