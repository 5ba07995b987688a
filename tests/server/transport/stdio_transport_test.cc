// StdioTransport over a pipe pair, driven in the test's own thread.
#include "server/transport/stdio_transport.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include "tests/server/test_support.h"

namespace brig::transport {
namespace {

using namespace std::chrono_literals;
using server::testing::kDeadline;

// Runs io until done() holds; false after the deadline.
bool pump(asio::io_context& io, const std::function<bool()>& done,
          std::chrono::milliseconds timeout = kDeadline) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    io.restart();
    io.run_for(5ms);
  }
  return true;
}

// A transport whose input and output are pipes the test holds the other ends of.
struct PipeFixture {
  asio::io_context io{1};
  std::vector<std::size_t> chunks;  // the size of every on_bytes call
  UniqueFd to_server;               // test writes the transport's input here
  UniqueFd from_server;             // test reads the transport's output here (non-blocking)
  std::shared_ptr<StdioTransport> transport;
  std::string input_seen;
  std::optional<std::optional<Error>> input_end;
  bool closed = false;

  explicit PipeFixture(StreamLimits limits = {}) {
    int in[2], out[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC | O_NONBLOCK), 0);
    // The transport's write end must start blocking, like a real stdout.
    ::fcntl(out[1], F_SETFL, 0);
    to_server.reset(in[1]);
    from_server.reset(out[0]);
    transport = StdioTransport::create(io.get_executor(), UniqueFd(in[0]), UniqueFd(out[1]), limits,
                                       "test pipe");
    transport->start({
        .on_bytes =
            [this](std::string_view b) {
              input_seen += b;
              chunks.push_back(b.size());
            },
        .on_input_end = [this](std::optional<Error> why) { input_end = std::move(why); },
        .on_closed = [this] { closed = true; },
    });
  }

  void write_input(std::string_view s) {
    ASSERT_EQ(::write(to_server.get(), s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  // Everything readable from the output pipe right now; eof set at end of file.
  std::string drain_output(bool* eof = nullptr) {
    std::string out;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(from_server.get(), buf, sizeof buf);
      if (n > 0) {
        out.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0 && eof != nullptr) *eof = true;
      return out;
    }
  }
};

TEST(StdioTransport, WritesEachMessageAsOneLineAndDeliversInputChunks) {
  PipeFixture f;
  f.transport->send("{\"a\":1}");
  f.transport->send("{\"b\":2}");
  std::string out;
  ASSERT_TRUE(pump(f.io, [&] {
    out += f.drain_output();
    return out.size() >= 16;
  }));
  EXPECT_EQ(out, "{\"a\":1}\n{\"b\":2}\n");

  f.write_input("{\"x\":");
  ASSERT_TRUE(pump(f.io, [&] { return f.input_seen.size() == 5; }));
  f.write_input("1}\n");
  ASSERT_TRUE(pump(f.io, [&] { return f.input_seen == "{\"x\":1}\n"; }));
  EXPECT_FALSE(f.input_end);
  f.transport->abort();
  ASSERT_TRUE(pump(f.io, [&] { return f.closed; }));
}

// Small messages share queue entries (and writes) while a write is under
// way; what arrives must still be every message, whole and in order.
TEST(StdioTransport, KeepsEveryMessageInOrderWhenSmallOnesShareWrites) {
  PipeFixture f;
  std::string expected;
  auto send = [&](std::string m) {
    expected += m + "\n";
    f.transport->send(std::move(m));
  };
  // The pipe (64 KiB) fills with nobody reading, so later messages queue
  // behind a write in progress; large ones keep entries of their own.
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 2000; ++i) send("{\"id\":" + std::to_string(round * 10000 + i) + "}");
    send(std::string(100 << 10, static_cast<char>('a' + round)));
    pump(
        f.io, [] { return false; }, 20ms);
  }
  std::string out;
  ASSERT_TRUE(pump(f.io, [&] {
    out += f.drain_output();
    return out.size() >= expected.size();
  }));
  EXPECT_EQ(out.size(), expected.size());
  EXPECT_TRUE(out == expected);
  EXPECT_EQ(f.transport->queued_bytes(), 0u);
}

// Short lines are read a little at a time (their answers go out between
// reads); inside a long line, reads take the whole buffer.
TEST(StdioTransport, ReadsShortLinesInSmallChunksAndLongOnesInLargeChunks) {
  PipeFixture f(StreamLimits{.read_chunk_bytes = 64 << 10, .line_read_bytes = 1 << 10});
  std::string lines;
  for (int i = 0; i < 400; ++i) lines += "{\"id\":" + std::to_string(i) + "}\n";
  ASSERT_GT(lines.size(), 4u << 10);
  f.write_input(lines);
  ASSERT_TRUE(pump(f.io, [&] { return f.input_seen.size() == lines.size(); }));
  EXPECT_EQ(f.input_seen, lines);
  EXPECT_GE(f.chunks.size(), 4u);
  for (std::size_t size : f.chunks) EXPECT_LE(size, 1u << 10);

  // A 60 KiB line: after its first read, which ends inside it, reads grow.
  f.chunks.clear();
  f.input_seen.clear();
  const std::string long_line = std::string(60 << 10, 'x') + "\n";
  f.write_input(long_line);
  ASSERT_TRUE(pump(f.io, [&] { return f.input_seen.size() == long_line.size(); }));
  EXPECT_EQ(f.input_seen, long_line);
  ASSERT_GE(f.chunks.size(), 2u);
  EXPECT_EQ(f.chunks[0], 1u << 10);
  EXPECT_GT(f.chunks[1], 1u << 10);
  f.transport->abort();
  ASSERT_TRUE(pump(f.io, [&] { return f.closed; }));
}

TEST(StdioTransport, ReportsEndOfInputAndFlushesOnClose) {
  PipeFixture f;
  f.to_server.reset();
  ASSERT_TRUE(pump(f.io, [&] { return f.input_end.has_value(); }));
  EXPECT_FALSE(f.input_end->has_value()) << "EOF is not an error";

  // Output still works after input ended; close() writes it all, then closes.
  for (int i = 0; i < 100; ++i) f.transport->send(std::string(1000, 'x'));
  f.transport->close();
  f.transport->send("dropped after close");
  std::string out;
  bool eof = false;
  ASSERT_TRUE(pump(f.io, [&] {
    out += f.drain_output(&eof);
    return eof;
  }));
  EXPECT_EQ(out.size(), 100u * 1001u);
  EXPECT_EQ(out.find("dropped"), std::string::npos);
  ASSERT_TRUE(pump(f.io, [&] { return f.closed; }));
}

TEST(StdioTransport, StopsReadingWhileTheOutputQueueIsFullAndResumesWhenItDrains) {
  PipeFixture f(StreamLimits{.send_queue_bytes = 16 << 10, .stall_timeout = 60s});
  // Nobody reads the output: the pipe (64 KiB) fills and the rest queues.
  for (int i = 0; i < 64; ++i) f.transport->send(std::string(4095, 'y'));
  ASSERT_TRUE(pump(f.io, [&] { return f.transport->queued_bytes() < 64u * 4096u; }));
  f.write_input("first\n");
  ASSERT_TRUE(pump(f.io, [&] { return f.transport->input_paused(); }));
  // While paused, input stays unread however long we wait.
  pump(
      f.io, [] { return false; }, 300ms);
  EXPECT_EQ(f.input_seen, "");

  std::size_t drained = 0;
  ASSERT_TRUE(pump(f.io, [&] {
    drained += f.drain_output().size();
    return f.input_seen == "first\n";
  }));
  EXPECT_FALSE(f.input_end);
  ASSERT_TRUE(pump(f.io, [&] {
    drained += f.drain_output().size();
    return drained == 64u * 4096u;
  }));
  EXPECT_EQ(f.transport->queued_bytes(), 0u);
}

// Issue 15: per-connection limits alone let many stalled clients add up. A
// full server-wide budget makes a connection holding more than its fair share
// full (no input read, no work started) while one that reads its answers
// goes on; room comes back as the stalled one drains.
TEST(StdioTransport, AFullServerBudgetStopsTheConnectionsHoldingItNotTheOthers) {
  auto budget = std::make_shared<OutputBudget>();
  budget->limit = 2 << 20;
  PipeFixture stalled(StreamLimits{.stall_timeout = 60s, .budget = budget});
  PipeFixture reading(StreamLimits{.stall_timeout = 60s, .budget = budget});
  for (int i = 0; i < 40; ++i) stalled.transport->send(std::string((64 << 10) - 1, 's'));
  ASSERT_TRUE(pump(stalled.io, [&] { return budget->full(); }));
  EXPECT_TRUE(stalled.transport->output_full()) << "far under its own 64 MiB, over its share";
  reading.transport->send("small");
  ASSERT_TRUE(pump(reading.io, [&] { return reading.drain_output() == "small\n"; }));
  EXPECT_FALSE(reading.transport->output_full());

  bool room = false;
  asio::co_spawn(
      stalled.io,
      [&]() -> asio::awaitable<void> {
        co_await stalled.transport->output_caught_up();
        room = true;
      },
      asio::detached);
  pump(
      stalled.io, [] { return false; }, 200ms);
  EXPECT_FALSE(room) << "no room while the peer reads nothing";
  ASSERT_TRUE(pump(stalled.io, [&] {
    stalled.drain_output();
    return room;
  }));
  EXPECT_FALSE(stalled.transport->output_full());
  ASSERT_TRUE(pump(stalled.io, [&] {
    stalled.drain_output();
    return stalled.transport->queued_bytes() == 0;
  }));
  EXPECT_EQ(budget->used, 0u);
}

// Issue 15: a client that does not read its replies must not get more of
// them made. Past backlog_bytes unread, the transport says so (no work
// starts) but still reads input; output_caught_up() returns once the peer
// has read enough.
TEST(StdioTransport, ABacklogOfUnreadRepliesHoldsNewWorkButNotInput) {
  PipeFixture f(StreamLimits{.backlog_bytes = 256 << 10, .stall_timeout = 60s});
  f.transport->send(std::string(100 << 10, 'a'));
  ASSERT_TRUE(pump(f.io, [&] { return f.transport->queued_bytes() < (100u << 10); }));
  EXPECT_FALSE(f.transport->output_backlogged()) << "a pipe's worth is not a backlog";
  for (int i = 0; i < 8; ++i) f.transport->send(std::string(64 << 10, 'b'));
  EXPECT_TRUE(f.transport->output_backlogged());
  EXPECT_FALSE(f.transport->output_full());
  f.write_input("still read\n");
  ASSERT_TRUE(pump(f.io, [&] { return f.input_seen == "still read\n"; }));

  bool caught_up = false;
  asio::co_spawn(
      f.io,
      [&]() -> asio::awaitable<void> {
        co_await f.transport->output_caught_up();
        caught_up = true;
      },
      asio::detached);
  pump(
      f.io, [] { return false; }, 200ms);
  EXPECT_FALSE(caught_up) << "nothing was read";
  ASSERT_TRUE(pump(f.io, [&] {
    f.drain_output();
    return caught_up;
  }));
  EXPECT_LE(f.transport->queued_bytes(), std::size_t{256} << 10);
  EXPECT_FALSE(f.transport->output_backlogged());
}

TEST(StdioTransport, ClosesAPeerWhoseOutputStaysFullPastTheStallTimeout) {
  PipeFixture f(StreamLimits{.send_queue_bytes = 16 << 10, .stall_timeout = 200ms});
  for (int i = 0; i < 64; ++i) f.transport->send(std::string(4095, 'z'));
  ASSERT_TRUE(pump(f.io, [&] { return f.input_end.has_value(); }));
  ASSERT_TRUE(f.input_end->has_value());
  EXPECT_NE((*f.input_end)->why.find("not reading"), std::string::npos)
      << (*f.input_end)->to_string();
  ASSERT_TRUE(pump(f.io, [&] { return f.closed; }));
  EXPECT_EQ(f.transport->queued_bytes(), 0u);
}

TEST(StdioTransport, RestoresTheBlockingModeOfItsDescriptorsOnClose) {
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  UniqueFd reader(out[0]);
  const int writer_copy = ::dup(out[1]);  // shares the open file description
  asio::io_context io{1};
  int in[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  UniqueFd input_writer(in[1]);
  auto t = StdioTransport::create(io.get_executor(), UniqueFd(in[0]), UniqueFd(out[1]), {}, "t");
  bool closed = false;
  t->start({.on_bytes = {}, .on_input_end = {}, .on_closed = [&] { closed = true; }});
  t->send("hello");
  ASSERT_TRUE(pump(io, [&] { return t->queued_bytes() == 0; }));
  t->close();
  ASSERT_TRUE(pump(io, [&] { return closed; }));
  EXPECT_EQ(::fcntl(writer_copy, F_GETFL) & O_NONBLOCK, 0);
  ::close(writer_copy);
}

}  // namespace
}  // namespace brig::transport
