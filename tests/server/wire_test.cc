// Raw-wire tests: bytes straight into brig-test-server (its stdin or its Unix
// socket), exact answers checked line by line, and after every case a proof
// that the server still serves. "No reply" is asserted by ordering, never by
// sleeping: a request sent after the silent message must get the next line.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/server/wire_client.h"

namespace brig::wire {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Generous: ≥ 10× what any answer needs on a loaded 2-core machine under ASan.
constexpr auto kAnswerTimeout = 60s;

const char* const kModern = "2026-07-28";

Json modern_meta() {
  return {{"io.modelcontextprotocol/protocolVersion", kModern},
          {"io.modelcontextprotocol/clientCapabilities", Json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "wire-test"}, {"version", "1"}}}};
}

// A 2026-07-28 tools/call: no handshake needed on any connection.
Json modern_call(const Json& id, const std::string& tool, const Json& arguments) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", tool}, {"arguments", arguments}, {"_meta", modern_meta()}}}};
}

std::string line(const Json& message) {
  return message.dump() + "\n";
}

// The next line parsed as JSON; empty (and a recorded failure) on timeout,
// EOF or a line that is not JSON.
std::optional<Json> next_message(WireStream& stream,
                                 std::chrono::milliseconds timeout = kAnswerTimeout) {
  auto text = stream.read_line(timeout);
  if (!text) {
    ADD_FAILURE() << (stream.at_eof() ? "server closed its output" : "no answer in time");
    return std::nullopt;
  }
  Json parsed = Json::parse(*text, nullptr, false);
  if (parsed.is_discarded()) {
    ADD_FAILURE() << "server sent a line that is not JSON: " << text->substr(0, 200);
    return std::nullopt;
  }
  return parsed;
}

// An error response with exactly the members JSON-RPC allows, the given id
// (empty: no "id" member at all, not null) and code.
void expect_error(const Json& m, const std::optional<Json>& id, int code) {
  SCOPED_TRACE(m.dump().substr(0, 400));
  EXPECT_EQ(m.value("jsonrpc", ""), "2.0");
  if (id) {
    EXPECT_EQ(m.value("id", Json()), *id);
  } else {
    EXPECT_FALSE(m.contains("id")) << "id must be left out, not null";
  }
  ASSERT_TRUE(m.contains("error"));
  EXPECT_FALSE(m.contains("result"));
  EXPECT_EQ(m["error"].value("code", 0), code);
  ASSERT_TRUE(m["error"].contains("message"));
  EXPECT_TRUE(m["error"]["message"].is_string() && !m["error"]["message"].empty());
  for (const auto& [key, value] : m.items()) {
    EXPECT_TRUE(key == "jsonrpc" || key == "id" || key == "error") << "unexpected member " << key;
  }
}

// Sends one line and expects exactly this error as the next line.
void expect_error_for(WireStream& stream, std::string_view bytes, const std::optional<Json>& id,
                      int code) {
  SCOPED_TRACE(std::string(bytes.substr(0, 200)));
  ASSERT_TRUE(stream.write(bytes));
  auto m = next_message(stream);
  ASSERT_TRUE(m);
  expect_error(*m, id, code);
}

// The echo result for text, as a modern (2026-07-28) result.
void expect_echo_result(const Json& m, const Json& id, const std::string& text) {
  SCOPED_TRACE(m.dump().substr(0, 400));
  EXPECT_EQ(m.value("jsonrpc", ""), "2.0");
  EXPECT_EQ(m.value("id", Json()), id);
  ASSERT_TRUE(m.contains("result"));
  const Json& r = m["result"];
  EXPECT_EQ(r.value("resultType", ""), "complete");
  EXPECT_EQ(r.value("isError", false), false);
  EXPECT_EQ(r["structuredContent"], (Json{{"text", text}}));
  EXPECT_EQ(r["content"], (Json::array({{{"type", "text"}, {"text", text}}})));
}

// Proves the server still serves on this stream: a modern echo and a legacy
// ping, each answered as the very next line (so nothing stray came before).
void expect_alive(WireStream& stream, const std::string& tag) {
  SCOPED_TRACE("alive check " + tag);
  Json echo_id = "alive-" + tag;
  ASSERT_TRUE(stream.write(line(modern_call(echo_id, "echo", {{"text", tag}}))));
  auto echo = next_message(stream);
  ASSERT_TRUE(echo);
  expect_echo_result(*echo, echo_id, tag);

  Json ping_id = "ping-" + tag;
  ASSERT_TRUE(stream.write(line({{"jsonrpc", "2.0"}, {"id", ping_id}, {"method", "ping"}})));
  auto pong = next_message(stream);
  ASSERT_TRUE(pong);
  EXPECT_EQ(*pong, (Json{{"jsonrpc", "2.0"}, {"id", ping_id}, {"result", Json::object()}}));
}

class Wire : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir();
    ASSERT_FALSE(dir_.empty());
    auto process = ServerProcess::start(sibling_executable("brig-test-server"),
                                        {"serve", "--workspace", dir_}, true);
    ASSERT_TRUE(process) << "cannot start " << sibling_executable("brig-test-server");
    server_.emplace(std::move(*process));
  }
  void TearDown() override {
    if (server_) {
      // EOF on stdin ends brig cleanly (exit 0): every test also checks that.
      server_->stream().close_write();
      auto status = server_->wait_exit(30s);
      ASSERT_TRUE(status) << "server did not exit after EOF on stdin";
      EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  WireStream& wire() { return server_->stream(); }

  std::string dir_;
  std::optional<ServerProcess> server_;
};

TEST_F(Wire, InvalidJsonGetsParseErrorWithoutId) {
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":1,\n", std::nullopt, -32700);
  expect_error_for(wire(), "not json at all\n", std::nullopt, -32700);
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}}\n", std::nullopt,
                   -32700);
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",}\n", std::nullopt,
                   -32700);
  expect_alive(wire(), "after-invalid-json");
}

TEST_F(Wire, WrongTypesGetInvalidRequest) {
  // A readable id is echoed; an unreadable one is left out.
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":42}\n", Json(2), -32600);
  expect_error_for(wire(), "{\"jsonrpc\":2,\"id\":3,\"method\":\"ping\"}\n", Json(3), -32600);
  expect_error_for(wire(), "{\"jsonrpc\":\"1.0\",\"id\":\"v\",\"method\":\"ping\"}\n", Json("v"),
                   -32600);
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":\"x\"}\n",
                   Json(4), -32600);
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}\n",
                   std::nullopt, -32600);
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}\n", std::nullopt,
                   -32600);
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}\n", std::nullopt,
                   -32600);
  expect_error_for(wire(), "42\n", std::nullopt, -32600);
  expect_error_for(wire(), "\"ping\"\n", std::nullopt, -32600);
  expect_error_for(wire(), "[]\n", std::nullopt, -32600);
  // Well-formed JSON-RPC, but tools/call's params are wrong for the method.
  Json bad_name = modern_call(5, "echo", {{"text", "x"}});
  bad_name["params"]["name"] = 7;
  expect_error_for(wire(), line(bad_name), Json(5), -32602);
  expect_alive(wire(), "after-wrong-types");
}

TEST_F(Wire, MissingJsonrpcGetsInvalidRequest) {
  expect_error_for(wire(), "{\"id\":5,\"method\":\"ping\"}\n", Json(5), -32600);
  Json call = modern_call(6, "echo", {{"text", "x"}});
  call.erase("jsonrpc");
  expect_error_for(wire(), line(call), Json(6), -32600);
  expect_alive(wire(), "after-missing-jsonrpc");
}

TEST_F(Wire, NullIdGetsInvalidRequestWithoutId) {
  // The official TS client drops a response whose id is null: leave it out.
  expect_error_for(wire(), "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\n", std::nullopt,
                   -32600);
  Json call = modern_call(nullptr, "echo", {{"text", "x"}});
  expect_error_for(wire(), line(call), std::nullopt, -32600);
  expect_alive(wire(), "after-null-id");
}

TEST_F(Wire, HundredMebibyteLineGetsErrorAndStreamGoesOn) {
  // Over the default 64 MiB limit. Written in chunks while a second thread
  // reads, since brig may answer before the line ends.
  constexpr std::size_t kLineBytes = std::size_t{100} << 20;
  auto answer = std::async(std::launch::async, [&] { return wire().read_line(300s); });

  std::string head =
      "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"echo\",\"arguments\":{\"text\":\"";
  ASSERT_TRUE(wire().write(head));
  const std::string chunk(std::size_t{1} << 20, 'a');
  std::size_t written = head.size();
  while (written + chunk.size() < kLineBytes) {
    ASSERT_TRUE(wire().write(chunk)) << "server stopped reading after " << written << " bytes";
    written += chunk.size();
  }
  ASSERT_TRUE(wire().write(std::string(kLineBytes - written, 'a') + "\"}," +
                           "\"_meta\":" + modern_meta().dump() + "}}\n"));

  auto text = answer.get();
  ASSERT_TRUE(text) << "no answer to a 100 MiB line";
  Json m = Json::parse(*text, nullptr, false);
  ASSERT_FALSE(m.is_discarded()) << text->substr(0, 200);
  expect_error(m, std::nullopt, -32600);
  expect_alive(wire(), "after-huge-line");
}

TEST_F(Wire, SmallLineLimitIsConfigurable) {
  // --max-line-bytes moves the limit: a 2000-byte line over a 1024 limit is
  // refused, the next ordinary line is served.
  server_.reset();
  auto process =
      ServerProcess::start(sibling_executable("brig-test-server"),
                           {"serve", "--workspace", dir_, "--max-line-bytes", "1024"}, true);
  ASSERT_TRUE(process);
  server_.emplace(std::move(*process));
  expect_error_for(wire(), line(modern_call(8, "echo", {{"text", std::string(2000, 'b')}})),
                   std::nullopt, -32600);
  expect_alive(wire(), "after-limit");
}

TEST_F(Wire, BinaryGarbageGetsParseError) {
  std::string garbage;
  for (int round = 0; round < 64; ++round) {
    for (int b = 0; b < 256; ++b) {
      if (b != '\n') garbage.push_back(static_cast<char>((b * 37 + round) & 0xff));
    }
  }
  std::erase(garbage, '\n');
  expect_error_for(wire(), garbage + "\n", std::nullopt, -32700);
  // Valid JSON syntax around invalid UTF-8 is still not JSON.
  expect_error_for(
      wire(),
      "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}\n",
      std::nullopt, -32700);
  expect_error_for(wire(), std::string("\0\0\0\0\n", 5), std::nullopt, -32700);
  expect_alive(wire(), "after-garbage");
}

TEST_F(Wire, UnknownMethodGetsMethodNotFound) {
  Json modern = {{"jsonrpc", "2.0"},
                 {"id", 10},
                 {"method", "brig/no-such-method"},
                 {"params", {{"_meta", modern_meta()}}}};
  expect_error_for(wire(), line(modern), Json(10), -32601);
  // An unknown notification is not answered at all.
  ASSERT_TRUE(wire().write(line({{"jsonrpc", "2.0"}, {"method", "notifications/no-such"}})));
  expect_alive(wire(), "after-unknown-modern");

  // The same after a legacy handshake.
  ASSERT_TRUE(wire().write(line({{"jsonrpc", "2.0"},
                                 {"id", 11},
                                 {"method", "initialize"},
                                 {"params",
                                  {{"protocolVersion", "2025-11-25"},
                                   {"capabilities", Json::object()},
                                   {"clientInfo", {{"name", "wire-test"}, {"version", "1"}}}}}})));
  auto init = next_message(wire());
  ASSERT_TRUE(init);
  EXPECT_EQ((*init)["result"].value("protocolVersion", ""), "2025-11-25") << init->dump();
  ASSERT_TRUE(wire().write(line({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}})));
  expect_error_for(wire(),
                   line({{"jsonrpc", "2.0"}, {"id", 12}, {"method", "brig/no-such-method"}}),
                   Json(12), -32601);
  expect_alive(wire(), "after-unknown-legacy");
}

TEST_F(Wire, LegacyInitializeWithUnknownVersionGetsNewestLegacy) {
  ASSERT_TRUE(wire().write(line({{"jsonrpc", "2.0"},
                                 {"id", "init"},
                                 {"method", "initialize"},
                                 {"params",
                                  {{"protocolVersion", "1999-01-01"},
                                   {"capabilities", Json::object()},
                                   {"clientInfo", {{"name", "wire-test"}, {"version", "1"}}}}}})));
  auto init = next_message(wire());
  ASSERT_TRUE(init);
  EXPECT_EQ((*init)["result"].value("protocolVersion", ""), "2025-11-25") << init->dump();
  expect_alive(wire(), "after-initialize");
}

TEST_F(Wire, DuplicateInFlightIdIsRefusedAndFirstCallCompletes) {
  ASSERT_TRUE(wire().write(line(modern_call(13, "slow", {{"seconds", 2}}))));
  ASSERT_TRUE(wire().write(line(modern_call(13, "echo", {{"text", "dup"}}))));
  auto first = next_message(wire());
  ASSERT_TRUE(first);
  expect_error(*first, Json(13), -32600);
  auto second = next_message(wire());
  ASSERT_TRUE(second);
  SCOPED_TRACE(second->dump());
  EXPECT_EQ(second->value("id", Json()), Json(13));
  ASSERT_TRUE(second->contains("result"));
  EXPECT_EQ((*second)["result"].value("isError", false), false);
  std::string text = (*second)["result"]["content"][0].value("text", "");
  EXPECT_TRUE(text.starts_with("done after 2")) << text;
  expect_alive(wire(), "after-duplicate");
}

TEST_F(Wire, CancelForUnknownIdGetsNoReply) {
  Json params = {{"requestId", 999}, {"reason", "test"}};
  ASSERT_TRUE(wire().write(
      line({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", params}})));
  params["_meta"] = modern_meta();
  ASSERT_TRUE(wire().write(
      line({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", params}})));
  ASSERT_TRUE(wire().write(line({{"jsonrpc", "2.0"},
                                 {"method", "notifications/cancelled"},
                                 {"params", {{"requestId", "never-sent"}}}})));
  expect_alive(wire(), "after-unknown-cancel");
}

TEST_F(Wire, CancelledCallStopsAndIsNeverAnswered) {
  std::string marker = dir_ + "/marker";
  ASSERT_TRUE(
      wire().write(line(modern_call("slow-1", "slow", {{"seconds", 1}, {"marker", marker}}))));
  Json params = {{"requestId", "slow-1"}, {"reason", "test"}, {"_meta", modern_meta()}};
  ASSERT_TRUE(wire().write(
      line({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", params}})));
  expect_alive(wire(), "after-cancel");
  // Past the 1 s the call would have taken, three times over: nothing was
  // sent for it and the marker was never written.
  auto stray = wire().read_line(3s);
  EXPECT_FALSE(stray) << "got " << *stray;
  EXPECT_FALSE(fs::exists(marker));

  // The control: the same call, not cancelled, does write its marker.
  std::string control = dir_ + "/control";
  ASSERT_TRUE(
      wire().write(line(modern_call("slow-2", "slow", {{"seconds", 0.1}, {"marker", control}}))));
  auto done = next_message(wire());
  ASSERT_TRUE(done);
  EXPECT_EQ(done->value("id", Json()), "slow-2");
  EXPECT_TRUE(fs::exists(control));
}

TEST_F(Wire, ResponseSentByClientGetsNoReply) {
  ASSERT_TRUE(wire().write("{\"jsonrpc\":\"2.0\",\"id\":14,\"result\":{}}\n"));
  ASSERT_TRUE(wire().write(
      "{\"jsonrpc\":\"2.0\",\"id\":15,\"error\":{\"code\":-32000,\"message\":\"x\"}}\n"));
  ASSERT_TRUE(wire().write(
      "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{\"resultType\":\"complete\"}}\n"));
  expect_alive(wire(), "after-client-response");
}

TEST_F(Wire, DeeplyNestedJsonIsRefusedWithoutCrash) {
  for (std::size_t depth : {std::size_t{100}, std::size_t{100'000}}) {
    expect_error_for(wire(), std::string(depth, '[') + std::string(depth, ']') + "\n", std::nullopt,
                     -32600);
  }
  std::string nested = std::string(10'000, '[') + std::string(10'000, ']');
  Json call = modern_call(16, "echo", {{"text", "x"}});
  std::string text = call.dump();
  text.insert(text.rfind('}'), ",\"deep\":" + nested);
  expect_error_for(wire(), text + "\n", std::nullopt, -32600);
  // Brackets inside a string are text, not nesting.
  std::string brackets(10'000, '[');
  ASSERT_TRUE(wire().write(line(modern_call(17, "echo", {{"text", brackets}}))));
  auto m = next_message(wire());
  ASSERT_TRUE(m);
  expect_echo_result(*m, 17, brackets);
  expect_alive(wire(), "after-nesting");
}

TEST_F(Wire, ModernRequestMissingMetaFieldsGetsInvalidParams) {
  Json no_caps = modern_call(18, "echo", {{"text", "x"}});
  no_caps["params"]["_meta"].erase("io.modelcontextprotocol/clientCapabilities");
  expect_error_for(wire(), line(no_caps), Json(18), -32602);

  Json no_version = {{"jsonrpc", "2.0"},
                     {"id", 19},
                     {"method", "server/discover"},
                     {"params", {{"_meta", modern_meta()}}}};
  no_version["params"]["_meta"].erase("io.modelcontextprotocol/protocolVersion");
  expect_error_for(wire(), line(no_version), Json(19), -32602);

  expect_error_for(wire(),
                   line({{"jsonrpc", "2.0"},
                         {"id", 20},
                         {"method", "server/discover"},
                         {"params", Json::object()}}),
                   Json(20), -32602);
  expect_alive(wire(), "after-missing-meta");
}

TEST_F(Wire, UnsupportedModernVersionListsSupported) {
  Json call = modern_call(21, "echo", {{"text", "x"}});
  call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
  ASSERT_TRUE(wire().write(line(call)));
  auto m = next_message(wire());
  ASSERT_TRUE(m);
  expect_error(*m, Json(21), -32022);
  const Json& data = (*m)["error"]["data"];
  SCOPED_TRACE(m->dump());
  EXPECT_EQ(data.value("requested", ""), "2099-01-01");
  ASSERT_TRUE(data.contains("supported") && data["supported"].is_array());
  auto supported = data["supported"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(supported.begin(), supported.end(), kModern), supported.end());
  EXPECT_NE(std::find(supported.begin(), supported.end(), "2025-11-25"), supported.end());
  expect_alive(wire(), "after-unsupported-version");
}

TEST_F(Wire, HundredRequestsInFlightAreAnsweredInCompletionOrder) {
  // All 100 sent in one write; request i sleeps longer the earlier it was
  // sent, so the answers come back in reverse and all overlap in time.
  constexpr int kCount = 100;
  std::string batch;
  for (int i = 0; i < kCount; ++i) {
    double seconds = 0.5 + 0.01 * (kCount - 1 - i);
    batch += line(modern_call(i, "slow", {{"seconds", seconds}}));
  }
  ASSERT_TRUE(wire().write(batch));
  std::map<int, int> position;  // id -> answer index
  for (int n = 0; n < kCount; ++n) {
    auto m = next_message(wire());
    ASSERT_TRUE(m) << "after " << n << " answers";
    ASSERT_TRUE(m->contains("result")) << m->dump();
    int id = m->value("id", -1);
    EXPECT_TRUE(position.emplace(id, n).second) << "id " << id << " answered twice";
    EXPECT_TRUE((*m)["result"]["content"][0].value("text", "").starts_with("done after"));
  }
  EXPECT_EQ(position.size(), std::size_t{kCount});
  // 1 s apart in completion time: order, not timing.
  EXPECT_LT(position[kCount - 1], position[0]);
  expect_alive(wire(), "after-hundred");
}

// 32 clients connected at once to one socket server, each with a slow call
// in flight while its echo is answered.
TEST(WireSocket, ThirtyTwoConcurrentClients) {
  std::string dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/s.sock";
  auto server =
      ServerProcess::start(sibling_executable("brig-test-server"),
                           {"serve", "--workspace", dir, "--listen", "unix://" + path}, false);
  ASSERT_TRUE(server);
  ASSERT_TRUE(wait_for_socket(path, 60s)) << "no socket at " << path;

  constexpr int kClients = 32;
  std::vector<WireStream> clients;
  for (int i = 0; i < kClients; ++i) {
    auto c = WireStream::connect_unix(path);
    ASSERT_TRUE(c) << "client " << i;
    clients.push_back(std::move(*c));
  }
  for (int i = 0; i < kClients; ++i) {
    std::string tag = "client-" + std::to_string(i);
    ASSERT_TRUE(clients[i].write(line(modern_call("slow-" + tag, "slow", {{"seconds", 0.5}})) +
                                 line(modern_call("echo-" + tag, "echo", {{"text", tag}}))));
  }
  for (int i = 0; i < kClients; ++i) {
    std::string tag = "client-" + std::to_string(i);
    SCOPED_TRACE(tag);
    auto echo = next_message(clients[i]);
    ASSERT_TRUE(echo);
    expect_echo_result(*echo, "echo-" + tag, tag);
    auto slow = next_message(clients[i]);
    ASSERT_TRUE(slow);
    EXPECT_EQ(slow->value("id", Json()), "slow-" + tag);
    EXPECT_TRUE((*slow)["result"]["content"][0].value("text", "").starts_with("done after"));
  }
  clients.clear();

  // The server outlives its clients: a fresh connection is served.
  auto again = WireStream::connect_unix(path);
  ASSERT_TRUE(again);
  expect_alive(*again, "after-32-clients");

  ASSERT_EQ(::kill(server->pid(), SIGTERM), 0);
  auto status = server->wait_exit(30s);
  ASSERT_TRUE(status) << "no exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(WireStdio, EofWithCallInFlightCancelsItAndExitsZero) {
  std::string dir = make_temp_dir();
  ASSERT_FALSE(dir.empty());
  std::string marker = dir + "/marker";
  auto server = ServerProcess::start(sibling_executable("brig-test-server"),
                                     {"serve", "--workspace", dir}, true);
  ASSERT_TRUE(server);
  ASSERT_TRUE(
      server->stream().write(line(modern_call(1, "slow", {{"seconds", 1}, {"marker", marker}}))));
  expect_alive(server->stream(), "before-eof");
  server->stream().close_write();
  auto status = server->wait_exit(30s);
  ASSERT_TRUE(status) << "no exit after EOF";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "wait status " << *status;
  // Exit came before the call's 1 s were up, without finishing its work.
  EXPECT_FALSE(fs::exists(marker)) << "brig finished the call instead of cancelling it";
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace brig::wire
