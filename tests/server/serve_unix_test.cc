// brig-test-server listening on a Unix socket.
#include <grp.h>
#include <pwd.h>
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

// The unprivileged user scripts/test.sh runs the suite as a second time.
constexpr const char* kTestUser = "brig-test";

// A socket connected to path by a child that runs as uid/gid: SO_PEERCRED
// holds the credentials of connect()'s caller, so the connection is that
// user's while this process goes on using it. Empty if the child failed.
UniqueFd connect_as(const std::string& path, uid_t uid, gid_t gid) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fd;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(3);
    ::_exit(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 0 : 2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) return UniqueFd();
  return fd;
}

// The result of one tools/call on client (an empty object if unanswered).
Json call_tool(LineClient& client, int id, std::string_view tool, Json args) {
  EXPECT_TRUE(client.send(tool_call(id, tool, std::move(args))));
  auto response = client.read_response(id);
  EXPECT_TRUE(response && response->contains("result"))
      << tool << ": " << (response ? response->dump() : "no answer");
  return response ? response->value("result", Json::object()) : Json::object();
}

std::string text_of(const Json& result) {
  std::string text;
  for (const Json& c : result.value("content", Json::array())) text += c.value("text", "");
  return text;
}

uid_t owner_of_file(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

TEST(ServeUnix, AnotherUsersCallsRunAsThatUserNotAsRootBrig) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root: only a root brig may admit another user, and only root can "
                    "connect as one; the unprivileged refusal has its own test";
  }
  const passwd* pw = ::getpwnam(kTestUser);
  if (pw == nullptr) {
    GTEST_SKIP() << "no user " << kTestUser << " (scripts/test.sh creates it: useradd "
                 << "--create-home --shell /usr/sbin/nologin " << kTestUser << ")";
  }
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  TempDir dir;
  // The workspace is the user's; a root-only file in it must stay root's.
  ASSERT_EQ(::chown(dir.path().c_str(), uid, gid), 0);
  std::ofstream(dir.file("secret")) << "root only\n";
  ASSERT_EQ(::chmod(dir.file("secret").c_str(), 0600), 0);
  SocketServer server(dir, {"--socket-mode", "0666", "--allow-uid", kTestUser});
  ASSERT_TRUE(server.ready()) << server.child().read_stderr(1s);

  UniqueFd fd = connect_as(server.path(), uid, gid);
  ASSERT_TRUE(fd) << "could not connect as " << kTestUser;
  LineClient peer(std::move(fd));
  // Its instructions describe its own jail (its home), not brig's (root's).
  ASSERT_TRUE(peer.send(initialize_request("init")));
  const auto answer = peer.read_response("init");
  ASSERT_TRUE(answer && answer->contains("result"));
  const std::string instructions = answer->at("result").value("instructions", "");
  EXPECT_NE(instructions.find(std::string(pw->pw_dir) + " is a private, empty home"),
            std::string::npos)
      << instructions;
  EXPECT_EQ(instructions.find("/root is a private"), std::string::npos) << instructions;
  ASSERT_TRUE(peer.send(initialized_notification()));
  LineClient own = server.connect();
  ASSERT_TRUE(initialize(own));

  const Json ids = call_tool(peer, 1, "exec", {{"command", "id -u; id -g"}});
  EXPECT_EQ(result_stream(ids, "stdout"), std::to_string(uid) + "\n" + std::to_string(gid) + "\n")
      << ids.dump();
  EXPECT_EQ(result_stream(call_tool(own, 1, "exec", {{"command", "id -u"}}), "stdout"), "0\n")
      << "brig's own client keeps brig's identity";

  // Its private home is at its own home's path, and its own.
  const Json home = call_tool(peer, 8, "exec", {{"command", "echo \"$HOME\" && touch ~/x"}});
  EXPECT_EQ(result_stream(home, "stdout"), std::string(pw->pw_dir) + "\n") << home.dump();
  EXPECT_EQ(home.at("structuredContent").value("exit_code", -1), 0) << home.dump();

  const Json wrote = call_tool(peer, 2, "write_file", {{"path", "mine.txt"}, {"content", "x"}});
  EXPECT_FALSE(wrote.value("isError", false)) << wrote.dump();
  EXPECT_EQ(owner_of_file(dir.file("mine.txt")), uid) << "write_file ran as root";
  call_tool(peer, 3, "exec", {{"command", "touch made-by-exec"}});
  EXPECT_EQ(owner_of_file(dir.file("made-by-exec")), uid) << "exec ran as root";

  const Json read = call_tool(peer, 4, "read_file", {{"path", "secret"}});
  EXPECT_TRUE(read.value("isError", false)) << read.dump();
  EXPECT_EQ(text_of(read).find("root only"), std::string::npos) << read.dump();
  EXPECT_NE(text_of(read).find("uid " + std::to_string(uid)), std::string::npos)
      << "the error must say whose permissions refused it: " << read.dump();
  const Json cat = call_tool(peer, 5, "exec", {{"command", "cat secret"}});
  EXPECT_NE(cat.at("structuredContent").value("exit_code", 0), 0) << cat.dump();
  EXPECT_EQ(cat.dump().find("root only"), std::string::npos) << cat.dump();

  // Jobs stay their owner's: the peer neither sees nor kills brig's own.
  const Json job = call_tool(own, 2, "exec", {{"command", "sleep 60"}, {"yield_after", 0}});
  const std::string job_id = job.at("structuredContent").value("job", "");
  ASSERT_FALSE(job_id.empty()) << job.dump();
  EXPECT_EQ(call_tool(peer, 6, "job", {{"action", "list"}}).at("structuredContent").at("jobs"),
            Json::array());
  const Json kill = call_tool(peer, 7, "job", {{"action", "kill"}, {"id", job_id}});
  EXPECT_TRUE(kill.value("isError", false)) << kill.dump();
  EXPECT_EQ(call_tool(own, 3, "job", {{"action", "list"}})
                .at("structuredContent")
                .at("jobs")
                .at(0)
                .value("status", ""),
            "running");
}

TEST(ServeUnix, AUserWhoCannotEnterTheWorkspaceIsToldWhy) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: only a root brig may admit another user";
  const passwd* pw = ::getpwnam(kTestUser);
  if (pw == nullptr) GTEST_SKIP() << "no user " << kTestUser << " (scripts/test.sh creates it)";
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  TempDir dir;
  const std::string ws = dir.file("ws");
  ASSERT_EQ(::mkdir(ws.c_str(), 0700), 0);
  Child child({sibling_binary("brig-test-server"), "serve", "--workspace", ws, "--listen",
               "unix://" + dir.file("s.sock"), "--socket-mode", "0666", "--allow-uid", kTestUser});
  ASSERT_TRUE(wait_until([&] { return static_cast<bool>(connect_unix(dir.file("s.sock"))); }));
  UniqueFd fd = connect_as(dir.file("s.sock"), uid, gid);
  ASSERT_TRUE(fd);
  LineClient peer(std::move(fd));
  ASSERT_TRUE(initialize(peer));
  // Admitted, but the kernel refuses it everything there, with a tool error
  // that says as whom the call ran.
  const Json read = call_tool(peer, 1, "read_file", {{"path", "f"}});
  EXPECT_TRUE(read.value("isError", false)) << read.dump();
  EXPECT_NE(text_of(read).find("Permission denied"), std::string::npos) << read.dump();
  EXPECT_NE(text_of(read).find("uid " + std::to_string(uid)), std::string::npos) << read.dump();
  // The command enters its working directory with no capability left, as
  // that user: the kernel refuses, and nothing runs there.
  const Json ls = call_tool(peer, 2, "exec", {{"command", "ls"}});
  EXPECT_TRUE(ls.value("isError", false)) << ls.dump();
  EXPECT_NE(text_of(ls).find("chdir " + ws + ": Permission denied"), std::string::npos)
      << ls.dump();
  EXPECT_NE(text_of(ls).find("uid " + std::to_string(uid)), std::string::npos) << ls.dump();
}

TEST(ServeUnix, AnUnprivilegedServerRefusesToAdmitOtherUsers) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "a root brig may admit other users (each served as itself); this is the "
                    "unprivileged brig's refusal";
  }
  TempDir dir;
  for (const std::vector<std::string>& option : {std::vector<std::string>{"--allow-uid", "0"},
                                                 std::vector<std::string>{"--allow-gid", "0"}}) {
    std::vector<std::string> args = {
        sibling_binary("brig-test-server"), "serve", "--workspace", dir.path(), "--listen",
        "unix://" + dir.file("s.sock")};
    args.insert(args.end(), option.begin(), option.end());
    Child child(args);
    const auto status = child.wait();
    ASSERT_TRUE(status && WIFEXITED(*status)) << option[0];
    EXPECT_EQ(WEXITSTATUS(*status), 1) << option[0];
    const std::string err = child.read_stderr();
    EXPECT_NE(err.find(option[0]), std::string::npos) << err;
    EXPECT_NE(err.find("not root"), std::string::npos) << err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("s.sock"))) << "it must not start listening";
  }
  // Naming brig's own user is harmless: it is admitted anyway.
  SocketServer server(dir, {"--allow-uid", std::to_string(::geteuid())});
  ASSERT_TRUE(server.ready()) << server.child().read_stderr(1s);
  LineClient client = server.connect();
  EXPECT_TRUE(ping(client, 1));
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
