#include "server/search/tree_walk.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/server/files/temp_dir.h"

namespace brig::search {
namespace {

using files::testing::TempDir;
using Strings = std::vector<std::string>;

// Records what the walk entered and visited, in order.
class Recorder : public WalkVisitor {
 public:
  bool enter(std::string_view path) override {
    entered.emplace_back(path);
    return true;
  }
  bool visit(const WalkEntry& e) override {
    visited.emplace_back(e.path);
    return true;
  }
  Strings entered, visited;
};

class TreeWalk : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int d = 0; d < 8; ++d) {
      const std::string dn = "d" + std::to_string(d);
      ASSERT_EQ(::mkdir(dir_.at(dn).c_str(), 0755), 0);
      ASSERT_EQ(::mkdir(dir_.at(dn + "/s").c_str(), 0755), 0);
      for (int f = 0; f < 3; ++f) {
        dir_.write(dn + "/f" + std::to_string(f), "");
        dir_.write(dn + "/s/g" + std::to_string(f), "");
      }
    }
    dir_.write("top", "");
  }

  Recorder walk(const std::string& start_at, std::size_t read_ahead_threads = 0) {
    WalkOptions options;
    options.start_at = start_at;
    options.read_ahead_threads = read_ahead_threads;
    TreeWalker walker(options);
    Recorder r;
    EXPECT_TRUE(walker.walk(dir_.path(), r));
    return r;
  }

  TempDir dir_;
};

// Starting at any entry gives the rest of the full walk's order, and a page
// that starts deep into the tree does not enter what comes before it.
TEST_F(TreeWalk, StartAtGivesTheRestOfTheOrderWithoutEnteringWhatCameBefore) {
  const Recorder all = walk("");
  ASSERT_EQ(all.visited.size(), 8u * 6 + 1);
  for (std::size_t i = 0; i < all.visited.size(); ++i) {
    const Recorder rest = walk(all.visited[i]);
    EXPECT_EQ(rest.visited, Strings(all.visited.begin() + static_cast<long>(i), all.visited.end()))
        << all.visited[i];
  }
  const Recorder late = walk("d6/s/g1");
  // Only d6 and d6/s on the way, then what follows: d7 and d7/s.
  EXPECT_EQ(late.entered, (Strings{"d6", "d6/s", "d7", "d7/s"}));
  EXPECT_EQ(late.visited.front(), "d6/s/g1");
}

// Directories read ahead on other threads change nothing: the same entries
// entered and visited in the same order, from the beginning or from any
// start (the threads skip what comes before it).
TEST_F(TreeWalk, ReadingAheadGivesTheSameWalk) {
  const Recorder alone = walk("");
  for (const std::size_t threads : {1u, 3u}) {
    for (int round = 0; round < 5; ++round) {
      const Recorder ahead = walk("", threads);
      EXPECT_EQ(ahead.entered, alone.entered);
      EXPECT_EQ(ahead.visited, alone.visited);
    }
    for (const std::string& start : alone.visited) {
      const Recorder a = walk(start), b = walk(start, threads);
      EXPECT_EQ(a.entered, b.entered) << start;
      EXPECT_EQ(a.visited, b.visited) << start;
    }
  }
}

// With few file descriptors (a strict policy's RLIMIT_NOFILE) reading ahead
// holds few or none, and the walk still sees everything it sees alone.
TEST_F(TreeWalk, FewDescriptorsStillGiveTheWholeWalk) {
  const Recorder alone = walk("");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  for (const rlim_t soft : {rlim_t{40}, rlim_t{100}}) {
    struct rlimit low = old;
    low.rlim_cur = std::min(soft, old.rlim_cur);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    const Recorder ahead = walk("", 2);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
    EXPECT_EQ(ahead.visited, alone.visited) << soft;
  }
}

// A visitor that stops early leaves directories read ahead untaken: they are
// dropped without a leak (ASan) or a hang.
TEST_F(TreeWalk, StoppingEarlyWithReadAheadEndsCleanly) {
  class StopAfter : public WalkVisitor {
   public:
    bool visit(const WalkEntry&) override { return ++seen < 4; }
    int seen = 0;
  } stop;
  WalkOptions options;
  options.read_ahead_threads = 2;
  TreeWalker walker(options);
  ASSERT_TRUE(walker.walk(dir_.path(), stop));
  EXPECT_TRUE(walker.stopped());
  EXPECT_EQ(stop.seen, 4);
}

// A start that no longer exists starts at the next entry in the order.
TEST_F(TreeWalk, AVanishedStartBeginsAtTheNextEntry) {
  EXPECT_EQ(walk("d3/e").visited.front(), "d3/f0");
  EXPECT_EQ(walk("d3/s/zz").visited.front(), "d4/f0");
  EXPECT_EQ(walk("d9/x").visited, (Strings{"top"}));
  EXPECT_EQ(walk("zzz").visited, Strings{});
}

}  // namespace
}  // namespace brig::search
