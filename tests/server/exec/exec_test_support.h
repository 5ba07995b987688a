// Shared pieces of the exec and job tool tests: a ToolContext that records
// what a call sends, a runner for one tool call on an io_context (with the
// session's way of cancelling it), and process checks with deadlines.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <asio/cancellation_signal.hpp>
#include <asio/io_context.hpp>

#include "server/tools/tool.h"

namespace brig::exec::testing {

using namespace std::chrono_literals;

// Generous: a loaded 2-core machine running sanitized builds.
inline constexpr std::chrono::milliseconds kDeadline = 60s;

class FakeContext final : public tools::ToolContext {
 public:
  struct Progress {
    double progress = 0;
    std::string message;
  };
  FakeContext() = default;
  explicit FakeContext(std::optional<process::PeerCredentials> peer) : peer_(std::move(peer)) {}

  void progress(double progress, std::optional<double>, std::string message) override {
    progress_.push_back({progress, std::move(message)});
  }
  void log(protocol::LogLevel, protocol::Json) override {}
  bool cancelled() const override { return cancelled_; }
  const std::optional<process::PeerCredentials>& peer() const override { return peer_; }
  std::uint64_t connection() const override { return connection_; }
  bool output_backlogged() const override { return output_backlogged_; }
  // Waits while output_backlogged_ (polled: a test flips it between io runs).
  asio::awaitable<void> room_for_reply() override;

  std::vector<Progress> progress_;
  bool cancelled_ = false;
  std::uint64_t connection_ = 0;
  // As a connection whose client reads none of its answers.
  bool output_backlogged_ = false;

 private:
  std::optional<process::PeerCredentials> peer_;
};

// One tool call in flight.
struct Call {
  bool done = false;
  std::exception_ptr error;
  std::optional<protocol::ToolResult> result;
  asio::cancellation_signal cancel;
};

// Starts tool's handler on io with args; the Call records its end.
void start_call(asio::io_context& io, const tools::Tool& tool, protocol::Json args,
                tools::ToolContext& ctx, Call& call);
// Cancels a call the way the session does (notifications/cancelled).
void cancel_call(FakeContext& ctx, Call& call);
// Runs io until cond holds (true) or timeout passes (false).
bool run_until(asio::io_context& io, const std::function<bool()>& cond,
               std::chrono::milliseconds timeout = kDeadline);

// Whether pid is gone (no such process, or a zombie awaiting its reaper).
bool process_gone(pid_t pid);
// What a report shows of one stream ("stdout", "stderr"): its section of the
// text block (structuredContent has only counts; docs/tools.md, "One
// copy"), which ends with a newline; empty when not shown.
std::string stream_text(const protocol::ToolResult& result, std::string_view name);

// The first text block of a result: what job's "read" returned.
std::string first_text(const protocol::ToolResult& result);

// Pids of processes whose command line contains needle.
std::vector<pid_t> processes_with(const std::string& needle);

}  // namespace brig::exec::testing
