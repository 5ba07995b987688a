// brig-spawner driven over a raw socket, without the asio handle: what it
// does with packets the handle never sends (garbage, truncated requests,
// fds that do not match), and how it refuses to start outside brig-server.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "jail/base/unique_fd.h"
#include "server/spawner/messages.h"
#include "tests/jail/jail_test_support.h"

namespace brig::spawner {
namespace {

using jail::test::bin_dir;
using ::testing::HasSubstr;

// brig-spawner with fd 0 = `stdin_fd` and `args` after its path; an empty
// environment, as brig-server starts it.
pid_t start_spawner(int stdin_fd, std::vector<std::string> args) {
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
  const std::string path = bin_dir() + "/brig-spawner";
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), envp);
  ::posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int exit_status(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class SpawnerProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    ours_.reset(sv[0]);
    UniqueFd theirs(sv[1]);
    pid_ = start_spawner(theirs.get(), {std::to_string(::getpid())});
    ASSERT_GT(pid_, 0);
  }
  void TearDown() override {
    if (pid_ > 0) {
      ours_.reset();
      EXPECT_EQ(exit_status(pid_), 0) << "brig-spawner exits 0 on EOF";
    }
  }

  // The next packet, to a generous deadline.
  Packet next() {
    pollfd p{ours_.get(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 60'000), 1);
    auto r = receive_packet(ours_.get(), MSG_DONTWAIT);
    EXPECT_TRUE(r) << r.error().to_string();
    if (!r || r->eof) return Packet{};
    auto packet = parse_packet(r->bytes);
    EXPECT_TRUE(packet) << packet.error().to_string();
    if (!packet) return Packet{};
    packet->fds = std::move(r->fds);
    return std::move(*packet);
  }

  // A STARTED for `id` that reports a failure; returns its Error.
  Error refusal(std::uint64_t id) {
    Packet p = next();
    EXPECT_EQ(p.type, MessageType::started);
    EXPECT_EQ(p.id, id);
    auto started = decode_started_packet(p);
    EXPECT_TRUE(started) << started.error().to_string();
    if (!started) return {};
    EXPECT_FALSE(*started);
    return *started ? Error{} : started->error();
  }

  void send(const std::string& bytes, const std::vector<int>& fds = {}) {
    ASSERT_EQ(send_packet(ours_.get(), bytes, fds, 0), 0);
  }

  UniqueFd ours_;
  pid_t pid_ = -1;
};

jail::ExecRequest true_request() {
  jail::ExecRequest r;
  r.argv = {"/bin/true"};
  return r;
}

TEST_F(SpawnerProtocolTest, GarbageIsSkippedAndBadRequestsAreRefused) {
  // Not even a header: logged and skipped, no reply.
  send("xyz");
  // A request cut short: refused with the decoder's reason.
  const std::string whole = spawn_message(7, jail::JailSpec{}, true_request());
  send(whole.substr(0, whole.size() - 3));
  EXPECT_THAT(refusal(7).to_string(), HasSubstr("decode spawn request"));
  // The mask names stdout, but no fd came.
  jail::ExecRequest r = true_request();
  r.stdout_fd = 1;
  send(spawn_message(8, jail::JailSpec{}, r));
  EXPECT_THAT(refusal(8).why, HasSubstr("0 fds came, the mask names 1"));
  // A reply type sent the wrong way: skipped.
  send(started_message(9, 1234, 0));
  // Still serving: an invalid request gets its validation error.
  send(spawn_message(10, jail::JailSpec{}, jail::ExecRequest{}));
  EXPECT_EQ(refusal(10).step, jail::SetupStep::validate);
}

TEST_F(SpawnerProtocolTest, FdsOfARefusedRequestAreClosed) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]);
  {
    UniqueFd write_end(fds[1]);
    jail::ExecRequest r;  // no argv: refused by validation
    r.stdout_fd = write_end.get();
    send(spawn_message(3, jail::JailSpec{}, r), spawn_fds(r));
  }
  EXPECT_EQ(refusal(3).step, jail::SetupStep::validate);
  // The spawner's copy of the write end goes once the request is handled:
  // the pipe reads EOF.
  pollfd p{read_end.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 60'000), 1);
  char c;
  EXPECT_EQ(::read(read_end.get(), &c, 1), 0);
}

TEST(SpawnerProgramTest, RefusesToRunWithoutItsSocket) {
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const pid_t not_socket = start_spawner(dev_null.get(), {std::to_string(::getpid())});
  ASSERT_GT(not_socket, 0);
  EXPECT_EQ(exit_status(not_socket), 2);
  const pid_t no_args = start_spawner(dev_null.get(), {});
  ASSERT_GT(no_args, 0);
  EXPECT_EQ(exit_status(no_args), 2);
  // Started by someone other than the process it names: it stops at once.
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  const pid_t orphan = start_spawner(b.get(), {"1"});
  ASSERT_GT(orphan, 0);
  EXPECT_EQ(exit_status(orphan), 1);
}

}  // namespace
}  // namespace brig::spawner
