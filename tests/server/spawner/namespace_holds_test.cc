// NamespaceHolds: how many brig-spawner holds, and that each is closed when
// it should be (a hold here is a pipe's read end: closed, its write end
// gets EPIPE).
#include "server/spawner/namespace_holds.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <gtest/gtest.h>

namespace brig::spawner {
namespace {

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

TEST(NamespaceHoldsTest, HoldsUpToItsCapOldestLetGoFirst) {
  NamespaceHolds holds(2);
  std::vector<HoldPipe> p(3);
  for (HoldPipe& q : p) holds.keep(std::move(q.read));
  EXPECT_EQ(holds.size(), 2u);
  EXPECT_FALSE(p[0].held()) << "the oldest was kept past the cap";
  EXPECT_TRUE(p[1].held());
  EXPECT_TRUE(p[2].held());
  holds.release_all();
  EXPECT_TRUE(holds.empty());
  EXPECT_FALSE(p[1].held());
  EXPECT_FALSE(p[2].held());
}

TEST(NamespaceHoldsTest, NoCapHoldsNoneAndAnEmptyFdIsNoHold) {
  NamespaceHolds none(0);
  HoldPipe p;
  none.keep(std::move(p.read));
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(p.held());
  NamespaceHolds some(4);
  some.keep(UniqueFd());
  EXPECT_TRUE(some.empty());
}

TEST(NamespaceHoldsTest, DroppedItLetsGoOfAll) {
  HoldPipe p;
  {
    NamespaceHolds holds(4);
    holds.keep(std::move(p.read));
    EXPECT_TRUE(p.held());
  }
  EXPECT_FALSE(p.held());
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
  // The usual soft limit of a desktop session: 128 held, 896 fds left.
  EXPECT_EQ(holds_allowed(uint64_t{64} << 30, 1'000'000, 1'000'000, 1024), 128u);
}

}  // namespace
}  // namespace brig::spawner
