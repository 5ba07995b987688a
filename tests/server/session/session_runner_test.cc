// SessionRunner with the test tools, over a pipe-pair StdioTransport; the
// server's io_context runs on its own thread, the test is the client.
#include "server/session/session_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <set>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>
#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include "server/transport/stdio_transport.h"
#include "tests/server/test_support.h"
#include "tests/server/test_tools.h"

namespace brig::session {
namespace {

using namespace std::chrono_literals;
using server::testing::Json;
using server::testing::LineClient;
using server::testing::TempDir;
using server::testing::tool_call;

class InProcessServer {
 public:
  explicit InProcessServer(protocol::SessionOptions options = {}) {
    EXPECT_TRUE(server::testing::add_test_tools(registry_));
    // A tool that throws, to check that an exception becomes -32603.
    EXPECT_TRUE(registry_.add(
        tools::Tool{protocol::ToolDescriptor{.name = "throws",
                                             .title = "",
                                             .description = "",
                                             .input_schema = Json{{"type", "object"}},
                                             .output_schema = std::nullopt,
                                             .annotations = Json::object()},
                    [](Json, tools::ToolContext&) -> asio::awaitable<protocol::ToolResult> {
                      throw std::runtime_error("kaboom");
                      co_return protocol::ToolResult::text("unreachable");
                    }}));
    int in[2], out[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    auto transport =
        transport::StdioTransport::create(io_.get_executor(), UniqueFd(in[0]), UniqueFd(out[1]),
                                          transport::StreamLimits{}, "in-process");
    SessionConfig config{protocol::ServerInfo{"brig-test", "0"}, "", options};
    runner_ = SessionRunner::create(io_.get_executor(), transport, registry_, config,
                                    [this] { finished_ = true; });
    runner_->start();
    client_ = std::make_unique<LineClient>(UniqueFd(out[0]), UniqueFd(in[1]));
    thread_ = std::thread([this] { io_.run(); });
  }

  ~InProcessServer() {
    asio::post(io_, [r = runner_] { r->shutdown(); });
    server::testing::wait_until([this] { return finished_.load(); });
    io_.stop();
    thread_.join();
  }

  LineClient& client() { return *client_; }
  bool finished() const { return finished_; }
  // The runner's running_calls(), read on the server's thread.
  std::size_t running_calls() {
    std::promise<std::size_t> count;
    asio::post(io_, [&] { count.set_value(runner_->running_calls()); });
    return count.get_future().get();
  }

 private:
  asio::io_context io_{1};
  tools::Registry registry_;
  std::shared_ptr<SessionRunner> runner_;
  std::atomic<bool> finished_{false};
  std::unique_ptr<LineClient> client_;
  std::thread thread_;
};

std::string text_of(const Json& response) {
  return response.at("result").at("content").at(0).at("text").get<std::string>();
}

TEST(SessionRunner, AnswersAHundredRequestsInFlight) {
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  std::string batch;
  for (int i = 1; i <= 100; ++i) {
    batch += protocol::encode(tool_call(i, "slow", {{"seconds", 0.3}})) + "\n";
  }
  ASSERT_TRUE(server.client().send_raw(batch));  // all 100 in one write
  std::set<std::int64_t> answered;
  for (int i = 0; i < 100; ++i) {
    auto m = server.client().read();
    ASSERT_TRUE(m) << "after " << answered.size() << " answers";
    ASSERT_TRUE(m->contains("result")) << m->dump();
    EXPECT_EQ(text_of(*m), "done after 0.3s");
    answered.insert(m->at("id").get<std::int64_t>());
  }
  EXPECT_EQ(answered.size(), 100u);
  EXPECT_EQ(*answered.begin(), 1);
  EXPECT_EQ(*answered.rbegin(), 100);
}

// Calls that finish at once, hundreds per read, are each answered and freed;
// a call still running stays counted while the others are swept.
TEST(SessionRunner, FreesPipelinedCallsAsTheyReturn) {
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  // Long enough to outlast 2000 answers on a loaded CI machine under ASan
  // (1 s did not): the sweep must be seen with the slow call still running.
  ASSERT_TRUE(server.client().send(tool_call("slow", "slow", {{"seconds", 8}})));
  std::string batch;
  for (int i = 1; i <= 2000; ++i) {
    batch += protocol::encode(tool_call(i, "echo", {{"text", std::to_string(i)}})) + "\n";
  }
  ASSERT_TRUE(server.client().send_raw(batch));
  for (int i = 1; i <= 2000; ++i) {
    auto m = server.client().read();
    ASSERT_TRUE(m) << "after " << i - 1 << " answers";
    EXPECT_EQ(m->at("id"), i);
    EXPECT_EQ(text_of(*m), std::to_string(i));
  }
  EXPECT_TRUE(server::testing::wait_until([&] { return server.running_calls() == 1; }));
  ASSERT_TRUE(server.client().read_response("slow"));
  EXPECT_TRUE(server::testing::wait_until([&] { return server.running_calls() == 0; }));
}

TEST(SessionRunner, AnswersInCompletionOrderNotRequestOrder) {
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  ASSERT_TRUE(server.client().send(tool_call("slow-one", "slow", {{"seconds", 1.5}})));
  ASSERT_TRUE(server.client().send(tool_call("fast-one", "echo", {{"text", "hi"}})));
  auto first = server.client().read();
  auto second = server.client().read();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->at("id"), "fast-one");
  EXPECT_EQ(text_of(*first), "hi");
  EXPECT_EQ(second->at("id"), "slow-one");
  EXPECT_EQ(text_of(*second), "done after 1.5s");
}

TEST(SessionRunner, CancellationStopsTheWorkNotJustTheReply) {
  TempDir dir;
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  const std::string marker = dir.file("marker");
  const std::string same_write_marker = dir.file("marker2");
  ASSERT_TRUE(server.client().send(tool_call(1, "slow", {{"seconds", 1}, {"marker", marker}})));
  // Make sure call 1 is running before it is cancelled.
  ASSERT_TRUE(server.client().send(tool_call(2, "echo", {{"text", "sync"}})));
  ASSERT_TRUE(server.client().read_response(2));
  ASSERT_TRUE(server.client().send(server::testing::cancel_notification(1)));
  // A call cancelled in the very write that started it must not run either.
  ASSERT_TRUE(server.client().send_raw(
      protocol::encode(tool_call(3, "slow", {{"seconds", 1}, {"marker", same_write_marker}})) +
      "\n" + protocol::encode(server::testing::cancel_notification(3)) + "\n"));

  // Well past both timers: an answer for 1 or 3 would arrive before the echo.
  std::this_thread::sleep_for(2500ms);
  ASSERT_TRUE(server.client().send(tool_call(4, "echo", {{"text", "after"}})));
  std::vector<Json> others;
  auto answer = server.client().read_response(4, &others);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(others.empty()) << others.front().dump();
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the cancelled timer still fired";
  EXPECT_FALSE(std::filesystem::exists(same_write_marker)) << "the cancelled call still ran";
}

// Finished calls leave their slots (and cancellation signals) for the next
// ones: a cancel must still reach a call that runs in a reused slot.
TEST(SessionRunner, CancelReachesACallInAReusedSlot) {
  TempDir dir;
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(server.client().send(tool_call(i, "echo", {{"text", "warm"}})));
    ASSERT_TRUE(server.client().read_response(i));
  }
  ASSERT_TRUE(server::testing::wait_until([&] { return server.running_calls() == 0; }));
  const std::string marker = dir.file("marker");
  ASSERT_TRUE(server.client().send(tool_call(4, "slow", {{"seconds", 1}, {"marker", marker}})));
  ASSERT_TRUE(server.client().send(tool_call(5, "echo", {{"text", "sync"}})));
  ASSERT_TRUE(server.client().read_response(5));
  ASSERT_TRUE(server.client().send(server::testing::cancel_notification(4)));
  EXPECT_TRUE(server::testing::wait_until([&] { return server.running_calls() == 0; }));
  std::this_thread::sleep_for(1500ms);
  ASSERT_TRUE(server.client().send(tool_call(6, "echo", {{"text", "after"}})));
  std::vector<Json> others;
  ASSERT_TRUE(server.client().read_response(6, &others));
  EXPECT_TRUE(others.empty()) << others.front().dump();
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the cancelled timer still fired";
}

TEST(SessionRunner, ProgressArrivesInOrderBeforeTheResult) {
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  ASSERT_TRUE(server.client().send(
      tool_call(7, "progress", {{"steps", 25}, {"interval_ms", 1}}, Json("tok"))));
  std::vector<Json> notes;
  auto answer = server.client().read_response(7, &notes);
  ASSERT_TRUE(answer);
  EXPECT_EQ(text_of(*answer), "done 25");
  EXPECT_EQ(answer->at("result").at("structuredContent"), Json({{"steps", 25}}));
  ASSERT_EQ(notes.size(), 25u);
  for (std::size_t i = 0; i < notes.size(); ++i) {
    const Json& p = notes[i].at("params");
    EXPECT_EQ(notes[i].at("method"), "notifications/progress");
    EXPECT_EQ(p.at("progressToken"), "tok");
    EXPECT_EQ(p.at("progress").get<double>(), static_cast<double>(i + 1));
    EXPECT_EQ(p.at("total").get<double>(), 25.0);
    EXPECT_EQ(p.at("message"), "step " + std::to_string(i + 1));
  }
}

TEST(SessionRunner, NoProgressWithoutAToken) {
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  ASSERT_TRUE(server.client().send(tool_call(8, "progress", {{"steps", 5}, {"interval_ms", 1}})));
  std::vector<Json> notes;
  ASSERT_TRUE(server.client().read_response(8, &notes));
  EXPECT_TRUE(notes.empty());
}

TEST(SessionRunner, ToolFailureIsAResultAndAnExceptionIsAnInternalError) {
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  ASSERT_TRUE(server.client().send(tool_call(1, "fail", {{"message", "nope"}})));
  auto failed = server.client().read_response(1);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->at("result").at("isError"), true);
  EXPECT_EQ(text_of(*failed), "nope");

  ASSERT_TRUE(server.client().send(tool_call(2, "throws", Json::object())));
  auto thrown = server.client().read_response(2);
  ASSERT_TRUE(thrown);
  EXPECT_EQ(thrown->at("error").at("code"), -32603);
  EXPECT_NE(thrown->at("error").at("message").get<std::string>().find("kaboom"), std::string::npos);

  ASSERT_TRUE(server.client().send(tool_call(3, "add", {{"a", "x"}, {"b", 1}})));
  auto invalid = server.client().read_response(3);
  ASSERT_TRUE(invalid);
  EXPECT_EQ(invalid->at("result").at("isError"), true);
  EXPECT_NE(text_of(*invalid).find("arguments.a"), std::string::npos) << invalid->dump();
}

TEST(SessionRunner, CallsOverTheInFlightLimitAreRefused) {
  InProcessServer server(protocol::SessionOptions{.max_in_flight_calls = 2});
  ASSERT_TRUE(server::testing::initialize(server.client()));
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(server.client().send(tool_call(i, "slow", {{"seconds", 0.5}})));
  }
  auto refused = server.client().read();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->at("id"), 3);
  EXPECT_EQ(refused->at("error").at("code"), -32603);
  ASSERT_TRUE(server.client().read_response(1));
  ASSERT_TRUE(server.client().read_response(2));
}

TEST(SessionRunner, EndOfInputCancelsCallsAndFinishes) {
  TempDir dir;
  InProcessServer server;
  ASSERT_TRUE(server::testing::initialize(server.client()));
  const std::string marker = dir.file("marker");
  ASSERT_TRUE(server.client().send(tool_call(1, "slow", {{"seconds", 2}, {"marker", marker}})));
  ASSERT_TRUE(server.client().send(tool_call(2, "echo", {{"text", "sync"}})));
  ASSERT_TRUE(server.client().read_response(2));
  server.client().close_write();
  ASSERT_TRUE(server::testing::wait_until([&] { return server.finished(); }));
  // The output closes without an answer to the cancelled call.
  EXPECT_FALSE(server.client().read());
  EXPECT_TRUE(server.client().eof());
  std::this_thread::sleep_for(2500ms);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

}  // namespace
}  // namespace brig::session
