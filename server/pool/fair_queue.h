// FairQueue: who runs next in a worker lane. Waiting calls are served one
// connection at a time, in turn (round robin), and each connection's calls
// in their order: a client with hundreds of reads queued delays another's
// read by at most one of its own, not all of them (issue 15: a stalled
// client's 300 queued read_file calls took other clients' p99 from 38 ms to
// 19 s). Pure: no I/O, no asio.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>

namespace brig::pool {

class FairQueue {
 public:
  // Queues `ticket` (unique, the caller's) behind the connection's others.
  void push(std::uint64_t connection, std::uint64_t ticket) {
    auto [it, first] = waiting_.try_emplace(connection);
    if (first) turns_.push_back(connection);
    it->second.push_back(ticket);
  }

  // The ticket to serve next, taken out of the queue; nullopt when empty.
  // Its connection goes to the back of the turns if it has more waiting.
  std::optional<std::uint64_t> pop() {
    return pop_first([](std::uint64_t, std::uint64_t) { return true; });
  }

  // The first ticket, in turn order, among each connection's next one, for
  // which `eligible(connection, ticket)` holds, taken out of the queue; its
  // connection goes to the back of the turns if it has more waiting. A
  // connection whose next ticket is not eligible keeps its place. nullopt
  // when none is.
  template <class Eligible>
  std::optional<std::uint64_t> pop_first(Eligible&& eligible) {
    for (auto turn = turns_.begin(); turn != turns_.end(); ++turn) {
      const std::uint64_t connection = *turn;
      auto it = waiting_.find(connection);
      const std::uint64_t ticket = it->second.front();
      if (!eligible(connection, ticket)) continue;
      turns_.erase(turn);
      it->second.pop_front();
      if (it->second.empty()) {
        waiting_.erase(it);
      } else {
        turns_.push_back(connection);
      }
      return ticket;
    }
    return std::nullopt;
  }

  // Takes out a ticket that no longer waits (its call was cancelled).
  void erase(std::uint64_t connection, std::uint64_t ticket) {
    auto it = waiting_.find(connection);
    if (it == waiting_.end()) return;
    std::erase(it->second, ticket);
    if (!it->second.empty()) return;
    waiting_.erase(it);
    std::erase(turns_, connection);
  }

  bool empty() const { return turns_.empty(); }

 private:
  std::map<std::uint64_t, std::deque<std::uint64_t>> waiting_;  // by connection, in order
  std::deque<std::uint64_t> turns_;  // connections with calls waiting, next first
};

}  // namespace brig::pool
