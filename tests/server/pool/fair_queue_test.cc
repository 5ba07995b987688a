// FairQueue: the order a worker lane serves waiting calls in.
#include "server/pool/fair_queue.h"

#include <vector>

#include <gtest/gtest.h>

namespace brig::pool {
namespace {

std::vector<std::uint64_t> drain(FairQueue& q) {
  std::vector<std::uint64_t> out;
  while (auto t = q.pop()) out.push_back(*t);
  return out;
}

// Issue 15: one connection's backlog must not make another's call wait for
// all of it. Connection 1 queued 100..104 before connection 2's 200 and
// connection 3's 300, 301: they take turns.
TEST(FairQueue, ConnectionsTakeTurnsAndEachKeepsItsOrder) {
  FairQueue q;
  for (std::uint64_t t = 100; t < 105; ++t) q.push(1, t);
  q.push(2, 200);
  q.push(3, 300);
  q.push(3, 301);
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{100, 200, 300, 101, 301, 102, 103, 104}));
  EXPECT_TRUE(q.empty());
}

TEST(FairQueue, ACancelledTicketIsSkippedAndItsConnectionLeavesWhenEmpty) {
  FairQueue q;
  q.push(1, 10);
  q.push(1, 11);
  q.push(2, 20);
  q.erase(1, 10);
  q.erase(2, 20);
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{11}));
  q.erase(7, 70);  // unknown: nothing happens
  EXPECT_TRUE(q.empty());
}

// A connection that comes back after its turn was used waits behind those
// already waiting.
TEST(FairQueue, AConnectionArrivingLaterQueuesBehindTheTurnsAlreadyWaiting) {
  FairQueue q;
  q.push(1, 10);
  q.push(2, 20);
  EXPECT_EQ(q.pop(), 10u);
  q.push(1, 11);
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{20, 11}));
}

// A worker lane skips a connection whose next call cannot run yet (its
// previous call still runs, or it writes while another write runs): that
// connection keeps its place, the next eligible one in turn is served.
TEST(FairQueue, PopFirstSkipsIneligibleConnectionsWhichKeepTheirPlace) {
  FairQueue q;
  q.push(1, 10);
  q.push(1, 11);
  q.push(2, 20);
  q.push(3, 30);
  const auto not_one = [](std::uint64_t connection, std::uint64_t) { return connection != 1; };
  EXPECT_EQ(q.pop_first(not_one), 20u);
  EXPECT_EQ(q.pop_first([](std::uint64_t, std::uint64_t t) { return t == 11; }), std::nullopt)
      << "only a connection's next ticket is a candidate";
  EXPECT_EQ(drain(q), (std::vector<std::uint64_t>{10, 30, 11}));
}

}  // namespace
}  // namespace brig::pool
