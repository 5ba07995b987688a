// brig-test-server listening on a Unix socket.
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/server/test_support.h"

namespace brig::server::testing {
namespace {

// A server on dir/s.sock, ready to accept when constructed.
class SocketServer {
 public:
  SocketServer(const TempDir& dir, std::vector<std::string> extra = {})
      : path_(dir.file("s.sock")) {
    std::vector<std::string> args = {sibling_binary("brig-test-server"),
                                     "serve",
                                     "--workspace",
                                     dir.path(),
                                     "--listen",
                                     "unix://" + path_};
    args.insert(args.end(), extra.begin(), extra.end());
    child_ = std::make_unique<Child>(args);
    ready_ = wait_until([&] {
      UniqueFd probe = connect_unix(path_);
      return static_cast<bool>(probe);
    });
  }

  bool ready() const { return ready_; }
  const std::string& path() const { return path_; }
  Child& child() { return *child_; }
  LineClient connect() const { return LineClient(connect_unix(path_)); }

 private:
  std::string path_;
  std::unique_ptr<Child> child_;
  bool ready_ = false;
};

bool exited_zero(const std::optional<int>& status) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

bool ping(LineClient& client, const Json& id) {
  return client.send({{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}}) &&
         client.read_response(id).has_value();
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

TEST(ServeUnix, SocketIs0600ByDefaultAndRemovedOnSigterm) {
  TempDir dir;
  SocketServer server(dir);
  ASSERT_TRUE(server.ready()) << server.child().read_stderr(1s);
  EXPECT_EQ(mode_of(server.path()), 0600u);
  LineClient client = server.connect();
  ASSERT_TRUE(initialize(client));
  ASSERT_TRUE(client.send(tool_call(1, "slow", {{"seconds", 120}})));
  ASSERT_TRUE(ping(client, 2));
  server.child().signal(SIGTERM);
  EXPECT_TRUE(exited_zero(server.child().wait()));
  EXPECT_FALSE(std::filesystem::exists(server.path())) << "the socket file was left behind";
  EXPECT_FALSE(client.read()) << "the cancelled call must not be answered";
  EXPECT_TRUE(client.eof());
}

TEST(ServeUnix, SocketModeIsConfigurable) {
  TempDir dir;
  SocketServer server(dir, {"--socket-mode", "0660"});
  ASSERT_TRUE(server.ready());
  EXPECT_EQ(mode_of(server.path()), 0660u);
}

TEST(ServeUnix, AStaleSocketIsReplaced) {
  TempDir dir;
  {
    // Bound and closed without unlink: what a killed server leaves.
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, dir.file("s.sock").c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  ASSERT_TRUE(std::filesystem::is_socket(dir.file("s.sock")));
  SocketServer server(dir);
  ASSERT_TRUE(server.ready()) << server.child().read_stderr(1s);
  LineClient client = server.connect();
  EXPECT_TRUE(ping(client, 1));
}

TEST(ServeUnix, ALiveSocketIsRefusedAndKeepsServing) {
  TempDir dir;
  SocketServer first(dir);
  ASSERT_TRUE(first.ready());
  Child second({sibling_binary("brig-test-server"), "serve", "--workspace", dir.path(), "--listen",
                "unix://" + first.path()});
  const auto status = second.wait();
  ASSERT_TRUE(status && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  const std::string err = second.read_stderr();
  EXPECT_NE(err.find("another server"), std::string::npos) << err;
  LineClient client = first.connect();
  EXPECT_TRUE(ping(client, 1));
}

TEST(ServeUnix, APathThatIsNotASocketIsLeftAlone) {
  TempDir dir;
  std::ofstream(dir.file("s.sock")) << "precious";
  Child child({sibling_binary("brig-test-server"), "serve", "--workspace", dir.path(), "--listen",
               "unix://" + dir.file("s.sock")});
  const auto status = child.wait();
  ASSERT_TRUE(status && WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  EXPECT_NE(child.read_stderr().find("not a socket"), std::string::npos);
  std::ifstream in(dir.file("s.sock"));
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
}

// In a child process that becomes uid/gid 65534: connects, sends ping, and
// exits 0 if answered, 1 if the server closed without an answer, 2 if the
// connect failed, 3 if it could not change identity.
int connect_as_nobody(const std::string& path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    UniqueFd fd = connect_unix(path);
    if (!fd) ::_exit(2);
    LineClient client(std::move(fd));
    if (!client.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}})) ::_exit(1);
    ::_exit(client.read_response(1) ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(ServeUnix, PeersOfAnotherUidAreRejectedUnlessAllowed) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root: only root can connect as a second uid (65534) to test the "
                    "SO_PEERCRED check; the same-uid path is covered by every other test";
  }
  TempDir dir;
  {
    // 0666 so the file permission lets uid 65534 connect: the peer check
    // alone must refuse it.
    SocketServer server(dir, {"--socket-mode", "0666"});
    ASSERT_TRUE(server.ready());
    EXPECT_EQ(connect_as_nobody(server.path()), 1);
    LineClient own = server.connect();
    EXPECT_TRUE(ping(own, 1)) << "the server must keep serving its own uid";
    server.child().signal(SIGTERM);
    ASSERT_TRUE(exited_zero(server.child().wait()));
    EXPECT_NE(server.child().read_stderr().find("not an allowed user"), std::string::npos);
  }
  {
    SocketServer server(dir, {"--socket-mode", "0666", "--allow-uid", "65534"});
    ASSERT_TRUE(server.ready());
    EXPECT_EQ(connect_as_nobody(server.path()), 0);
  }
  {
    SocketServer server(dir, {"--socket-mode", "0666", "--allow-gid", "65534"});
    ASSERT_TRUE(server.ready());
    EXPECT_EQ(connect_as_nobody(server.path()), 0);
  }
}

TEST(ServeUnix, ThirtyTwoConcurrentClientsAreServedIndependently) {
  TempDir dir;
  SocketServer server(dir);
  ASSERT_TRUE(server.ready());
  std::vector<LineClient> clients;
  for (int i = 0; i < 32; ++i) {
    clients.push_back(server.connect());
    ASSERT_TRUE(initialize(clients.back())) << "client " << i;
  }
  // All 32 calls are in flight at once, each on its own connection, each
  // using the same request id: sessions do not share state.
  for (int i = 0; i < 32; ++i) {
    ASSERT_TRUE(clients[i].send(tool_call(1, "slow", {{"seconds", 0.5}})));
    ASSERT_TRUE(clients[i].send(tool_call(2, "echo", {{"text", "client " + std::to_string(i)}})));
  }
  for (int i = 0; i < 32; ++i) {
    auto echo = clients[i].read_response(2);
    ASSERT_TRUE(echo) << "client " << i;
    EXPECT_EQ(echo->at("result").at("structuredContent").at("text"), "client " + std::to_string(i));
  }
  for (int i = 0; i < 32; ++i) {
    auto slow = clients[i].read_response(1);
    ASSERT_TRUE(slow) << "client " << i;
    EXPECT_TRUE(slow->contains("result"));
  }
}

TEST(ServeUnix, ConnectionsOverTheLimitAreClosed) {
  TempDir dir;
  SocketServer server(dir, {"--max-connections", "2"});
  ASSERT_TRUE(server.ready());
  // The readiness probe used a slot briefly: wait until it is released.
  auto a = std::make_unique<LineClient>(server.connect());
  ASSERT_TRUE(wait_until([&] {
    a = std::make_unique<LineClient>(server.connect());
    return ping(*a, 1);
  }));
  LineClient b = server.connect();
  ASSERT_TRUE(ping(b, 1));
  LineClient c = server.connect();
  c.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}});
  EXPECT_FALSE(c.read()) << "a third connection must be closed unanswered";
  EXPECT_TRUE(c.eof());
  a.reset();
  // Once a slot frees up, new connections are served again.
  EXPECT_TRUE(wait_until([&] {
    LineClient d = server.connect();
    return ping(d, 1);
  }));
  EXPECT_TRUE(ping(b, 2)) << "existing connections are unaffected";
}

TEST(ServeUnix, AClientThatStopsReadingIsDisconnected) {
  TempDir dir;
  SocketServer server(dir, {"--send-queue-bytes", "65536", "--stall-timeout", "1"});
  ASSERT_TRUE(server.ready());
  UniqueFd fd = connect_unix(server.path());
  ASSERT_TRUE(fd);
  // Bounds the blocking write below if the server never gives up.
  const timeval send_timeout{.tv_sec = kDeadline.count() / 1000, .tv_usec = 0};
  ASSERT_EQ(::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout), 0);
  LineClient hog(std::move(fd));
  ASSERT_TRUE(initialize(hog));
  // Ask for far more output than the queue and socket buffers hold, and never
  // read. The server stops reading too, so this write blocks until the
  // server gives up on the connection and closes it.
  const std::string big(100000, 'x');
  std::string requests;
  for (int i = 0; i < 400; ++i) {
    requests += protocol::encode(tool_call(i + 10, "echo", {{"text", big}})) + "\n";
  }
  EXPECT_FALSE(hog.send_raw(requests)) << "the server must close a connection that never reads";
  while (hog.read(5s)) {
  }
  EXPECT_TRUE(hog.eof());
  LineClient other = server.connect();
  EXPECT_TRUE(ping(other, 1)) << "other clients are unaffected";
  server.child().signal(SIGTERM);
  ASSERT_TRUE(exited_zero(server.child().wait()));
  EXPECT_NE(server.child().read_stderr().find("not reading"), std::string::npos);
}

}  // namespace
}  // namespace brig::server::testing
