// Issue 15: 50 socket clients at once, 200 mixed calls each (exec,
// read_file, write_file, list_directory, find_files, search), on one
// brig-test-server. Every reply is checked against what that client wrote:
// the file tools share one worker per lane between all clients, so a reply
// handed to the wrong call, or a write seen half-done, shows up here.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/text.h"
#include "tests/server/test_support.h"

namespace brig::server::testing {
namespace {

constexpr int kClients = 50;
constexpr int kCallsEach = 200;

// Per tool: the sum of its calls' round trips (ms) and their number, for
// the log: which tool a slow run waited on.
std::mutex g_times_mutex;
std::map<std::string, std::pair<double, int>> g_times;

std::string text_of(const Json& result) {
  std::string text;
  for (const Json& c : result.value("content", Json::array()))
    if (c.value("type", "") == "text") text += c.value("text", "");
  return text;
}

// One client's calls: a cycle of ten in which it writes a file of its own
// directory twice, then checks every tool's view of that directory.
// Returns what went wrong (empty: nothing).
std::string run_client(const std::string& socket, int me) {
  LineClient c(connect_unix(socket));
  if (!initialize(c)) return "initialize failed";
  const std::string dir = "c" + std::to_string(me);
  const std::string token = "tok-" + std::to_string(me) + "-";
  std::set<std::string> written;  // paths, relative to the workspace
  std::string last_path, last_text;
  int id = 1;
  for (int n = 0; n < kCallsEach; ++n, ++id) {
    const int kind = n % 10;
    Json args;
    std::string tool;
    switch (kind) {
      case 0:
      case 6:
        last_path = dir + "/f" + std::to_string(written.size()) + ".txt";
        last_text = token + std::to_string(written.size()) + "\nsecond line\n";
        tool = "write_file";
        args = {{"path", last_path}, {"content", last_text}, {"create_parents", true}};
        break;
      case 1:
      case 7:
        tool = "read_file";
        args = {{"path", last_path}};
        break;
      case 2:
        tool = "list_directory";
        args = {{"path", dir}};
        break;
      case 3:
      case 8:
        tool = "find_files";
        args = {{"pattern", dir + "/*.txt"}};
        break;
      case 4:
      case 9:
        tool = "search";
        args = {{"pattern", token + "[0-9]+"}, {"path", dir}};
        break;
      default:
        tool = "exec";
        args = {{"command", "echo " + token + std::to_string(n)}};
        break;
    }
    const auto sent = std::chrono::steady_clock::now();
    if (!c.send(tool_call(id, tool, args))) return "send failed at call " + std::to_string(n);
    auto r = c.read_response(id, nullptr, 60s);
    {
      const std::lock_guard lock(g_times_mutex);
      g_times[tool].first +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent)
              .count();
      ++g_times[tool].second;
    }
    if (!r) return tool + " call " + std::to_string(n) + ": no answer";
    const Json result = r->value("result", Json::object());
    const std::string where = tool + " call " + std::to_string(n) + ": ";
    if (!r->contains("result") || result.value("isError", false))
      return where + protocol::clip(r->dump(), 600);
    const Json s = result.value("structuredContent", Json::object());
    if (kind == 0 || kind == 6) {
      written.insert(last_path);
    } else if (kind == 1 || kind == 7) {
      if (text_of(result) != last_text) return where + "read " + text_of(result);
    } else if (kind == 2) {
      std::set<std::string> listed;
      for (const Json& e : s.value("entries", Json::array()))
        listed.insert(dir + "/" + e.value("path", ""));
      if (listed != written) return where + protocol::clip(s.dump(), 600);
    } else if (kind == 3 || kind == 8) {
      std::set<std::string> found;
      for (const Json& f : s.value("files", Json::array())) found.insert(f.value("path", ""));
      if (found != written) return where + protocol::clip(s.dump(), 600);
    } else if (kind == 4 || kind == 9) {
      // A search names its files relative to the path it searched.
      std::set<std::string> found;
      for (const Json& f : s.value("files", Json::array()))
        found.insert(dir + "/" + f.value("path", ""));
      if (found != written) return where + protocol::clip(s.dump(), 600);
    } else {
      const std::string want = token + std::to_string(n) + "\n";
      if (result_stream(result, "stdout") != want) return where + protocol::clip(r->dump(), 600);
    }
  }
  return "";
}

TEST(ManyClients, FiftyClientsOfTwoHundredMixedCallsAllGetTheirOwnRightAnswers) {
  // On a tmpfs: each write_file fsyncs the file and its directory, and on
  // a shared disk busy with builds that alone took this test past 3 min.
  // What is tested is who gets which answer, not the disk.
  TempDir ws(std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp");
  TempDir sock;
  const std::string socket = sock.file("s.sock");
  Child server({sibling_binary("brig-test-server"), "serve", "--workspace", ws.path(), "--listen",
                "unix://" + socket,
                // Each exec jail's policy limit is 4 GiB; the default budget
                // (this machine's memory) would refuse the fifth at once.
                "--jails-memory", std::to_string(std::uint64_t{1} << 40)});
  ASSERT_TRUE(wait_until([&] { return static_cast<bool>(connect_unix(socket)); }))
      << server.read_stderr(1s);

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i)
    threads.emplace_back([&, i] { failures[i] = run_client(socket, i); });
  for (std::thread& t : threads) t.join();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  std::cout << kClients << " clients x " << kCallsEach << " calls: " << took.count() << " ms\n";
  for (const auto& [tool, t] : g_times)
    std::cout << "  " << tool << ": " << t.second << " calls, mean " << t.first / t.second
              << " ms\n";
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(failures[i], "") << "client " << i;
  // The server is still whole after the load.
  LineClient after(connect_unix(socket));
  ASSERT_TRUE(initialize(after));
  ASSERT_TRUE(after.send(tool_call(1, "exec", {{"command", "echo still"}})));
  auto r = after.read_response(1);
  ASSERT_TRUE(r);
  EXPECT_EQ(result_stream(r->value("result", Json::object()), "stdout"), "still\n");
}

}  // namespace
}  // namespace brig::server::testing
