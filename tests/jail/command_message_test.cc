// The command a jail built ahead waits for (jail/command_message.h): "none
// sent" (the launcher dropped the jail unused: a silent exit) must never be
// confused with a message cut short, which the jail reports as a failed step.
#include "jail/command_message.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "jail/base/fd_message.h"
#include "jail/base/unique_fd.h"

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

}  // namespace
}  // namespace brig::jail::command
