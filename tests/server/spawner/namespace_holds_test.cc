// NamespaceHolds: how many brig-spawner holds, and that each is closed when
// it should be (a namespace's fd here is a pipe's read end: closed
// everywhere, its write end gets EPIPE).
#include "server/spawner/namespace_holds.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace brig::spawner {
namespace {

using namespace std::chrono_literals;

struct HoldPipe {
  UniqueFd read, write;
  HoldPipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    read.reset(fds[0]);
    write.reset(fds[1]);
  }
  // Whether its read end is still open somewhere.
  bool held() const {
    ::signal(SIGPIPE, SIG_IGN);
    return ::write(write.get(), "x", 1) == 1 || errno != EPIPE;
  }
};

// One jail's hold: two pipes' read ends stand for its two namespaces.
struct JailHold {
  HoldPipe network, mounts;
  jail::net::NamespaceHold take() { return {std::move(network.read), std::move(mounts.read)}; }
  bool held() const { return network.held() && mounts.held(); }
  bool let_go() const { return !network.held() && !mounts.held(); }
};

// Let go by a process of its own: closed soon after, not at once.
template <typename F>
bool soon(F f) {
  for (int i = 0; i < 500; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return f();
}

TEST(NamespaceHoldsTest, HoldsUpToItsCapThenLetsAllGo) {
  NamespaceHolds holds(2);
  std::vector<JailHold> p(3);
  holds.keep(p[0].take());
  holds.keep(p[1].take());
  EXPECT_EQ(holds.size(), 2u);
  EXPECT_TRUE(p[0].held());
  EXPECT_TRUE(p[1].held());
  holds.keep(p[2].take());
  EXPECT_EQ(holds.size(), 1u) << "the cap reached: all let go, then the new one kept";
  EXPECT_TRUE(soon([&] { return p[0].let_go() && p[1].let_go(); }));
  EXPECT_TRUE(p[2].held());
  holds.release_all();
  EXPECT_TRUE(holds.empty());
  EXPECT_TRUE(soon([&] { return p[2].let_go(); }));
}

TEST(NamespaceHoldsTest, NoCapHoldsNoneAndAnEmptyHoldIsNone) {
  NamespaceHolds none(0);
  JailHold p;
  none.keep(p.take());
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(p.let_go());
  NamespaceHolds some(4);
  some.keep({});
  EXPECT_TRUE(some.empty());
  // A child that could not open its mount namespace sends the socket alone.
  HoldPipe network;
  some.keep({std::move(network.read), UniqueFd()});
  EXPECT_EQ(some.size(), 1u);
  EXPECT_TRUE(network.held());
}

// This thread's children, live or zombie.
std::string children() {
  std::ifstream in("/proc/self/task/" + std::to_string(::gettid()) + "/children");
  std::string all;
  std::getline(in, all);
  return all;
}

TEST(NamespaceHoldsTest, DroppedItLetsGoOfAllAndReapsWhatTearsThemDown) {
  const std::string before = children();
  JailHold p;
  {
    NamespaceHolds holds(4);
    holds.keep(p.take());
    EXPECT_TRUE(p.held());
    holds.release_all();
    holds.keep(JailHold().take());
  }
  EXPECT_TRUE(p.let_go()) << "the destructor waits for the closing processes";
  EXPECT_EQ(children(), before) << "a closing process left unreaped";
}

// What a jail left in its tmpfs mounts stays with its held mount namespace:
// with memory short, everything held goes before anything more is kept.
TEST(NamespaceHoldsTest, MemoryUnderTheFloorLetsAllGo) {
  static std::uint64_t available = 0;
  available = std::uint64_t{4} << 30;
  NamespaceHolds holds(16, std::uint64_t{1} << 30,
                       [] { return std::optional<std::uint64_t>(available); });
  std::vector<JailHold> p(2);
  holds.keep(p[0].take());
  available = std::uint64_t{512} << 20;
  std::this_thread::sleep_for(kMemoryCheckEvery + 5ms);
  holds.keep(p[1].take());
  EXPECT_EQ(holds.size(), 1u);
  EXPECT_TRUE(soon([&] { return p[0].let_go(); }));
  EXPECT_TRUE(p[1].held());
}

TEST(NamespaceHoldsTest, CappedByMemoryNamespaceLimitsAndOpenFiles) {
  const std::optional<uint64_t> unknown;
  EXPECT_EQ(holds_allowed(unknown, unknown, unknown, unknown), kMaxHeld);
  EXPECT_EQ(holds_allowed(uint64_t{64} << 30, 1'000'000, 1'000'000, 1'000'000), kMaxHeld);
  EXPECT_EQ(holds_allowed(uint64_t{100} << 20, unknown, unknown, unknown), 10u);
  EXPECT_EQ(holds_allowed(uint64_t{5} << 20, unknown, unknown, unknown), 0u);
  EXPECT_EQ(holds_allowed(unknown, 80, unknown, unknown), 10u);
  EXPECT_EQ(holds_allowed(unknown, unknown, 7, unknown), 0u) << "would crowd out new jails";
  EXPECT_EQ(holds_allowed(uint64_t{64} << 30, 1'000'000, 0, unknown), 0u) << "user namespaces off";
  // The usual soft limit of a desktop session: 64 held (two fds each), 896
  // fds left.
  EXPECT_EQ(holds_allowed(uint64_t{64} << 30, 1'000'000, 1'000'000, 1024), 64u);
}

}  // namespace
}  // namespace brig::spawner
