// The TEST tools of brig-test-server and the server tests (contract in
// test_tools.h). Test code only: the shipped brig-server never has them.
#include "tests/server/test_tools.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

namespace brig::server::testing {
namespace {

using protocol::Json;
using protocol::ToolDescriptor;
using protocol::ToolResult;

// 3 → "3", 0.5 → "0.5": numbers printed the way JSON would.
std::string number_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return fmt::format("{}", static_cast<long long>(v));
  }
  return fmt::format("{}", v);
}

tools::Tool echo_tool() {
  return tools::Tool{ToolDescriptor{
                         .name = "echo",
                         .title = "Echo",
                         .description = "Returns its text unchanged.",
                         .input_schema = {{"type", "object"},
                                          {"properties", {{"text", {{"type", "string"}}}}},
                                          {"required", {"text"}}},
                         .output_schema = Json{{"type", "object"},
                                               {"properties", {{"text", {{"type", "string"}}}}},
                                               {"required", {"text"}}},
                         .annotations = {{"readOnlyHint", true}},
                     },
                     [](Json args, tools::ToolContext&) -> asio::awaitable<ToolResult> {
                       // Built member by member, as brig's own tools build what
                       // they send on every call: an initializer list makes (and
                       // frees) a temporary array per pair.
                       std::string& text = args.at("text").get_ref<std::string&>();
                       ToolResult r = ToolResult::text(text);
                       r.structured = Json::object();
                       r.structured->get_ref<Json::object_t&>().emplace("text", std::move(text));
                       co_return r;
                     }};
}

tools::Tool add_tool() {
  return tools::Tool{
      ToolDescriptor{
          .name = "add",
          .title = "Add",
          .description = "Adds two numbers.",
          .input_schema = {{"type", "object"},
                           {"properties",
                            {{"a", {{"type", "number"}}}, {"b", {{"type", "number"}}}}},
                           {"required", {"a", "b"}},
                           {"additionalProperties", false}},
          .output_schema = Json{{"type", "object"},
                                {"properties", {{"sum", {{"type", "number"}}}}},
                                {"required", {"sum"}}},
          .annotations = {{"readOnlyHint", true}},
      },
      [](Json args, tools::ToolContext&) -> asio::awaitable<ToolResult> {
        const double sum = args.at("a").get<double>() + args.at("b").get<double>();
        ToolResult r = ToolResult::text(number_text(sum));
        r.structured = Json{{"sum", sum}};
        co_return r;
      }};
}

// Waits on an asio timer, so cancellation stops it; the marker file proves
// whether the work ran to completion.
tools::Tool slow_tool() {
  return tools::Tool{
      ToolDescriptor{
          .name = "slow",
          .title = "Slow",
          .description = "Waits the given seconds, then writes \"done\" to marker if given.",
          .input_schema = {{"type", "object"},
                           {"properties",
                            {{"seconds", {{"type", "number"}, {"minimum", 0}}},
                             {"marker", {{"type", "string"}}}}},
                           {"required", {"seconds"}}},
          .output_schema = std::nullopt,
          .annotations = Json::object(),
      },
      [](Json args, tools::ToolContext&) -> asio::awaitable<ToolResult> {
        const double seconds = args.at("seconds").get<double>();
        asio::steady_timer timer(co_await asio::this_coro::executor);
        timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(seconds)));
        co_await timer.async_wait(asio::use_awaitable);
        if (args.contains("marker")) {
          std::ofstream(args.at("marker").get<std::string>()) << "done";
        }
        co_return ToolResult::text("done after " + number_text(seconds) + "s");
      }};
}

tools::Tool progress_tool() {
  return tools::Tool{
      ToolDescriptor{
          .name = "progress",
          .title = "Progress",
          .description = "Reports progress 1..steps, interval_ms apart.",
          .input_schema = {{"type", "object"},
                           {"properties",
                            {{"steps", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1000}}},
                             {"interval_ms",
                              {{"type", "integer"}, {"minimum", 0}, {"default", 10}}}}},
                           {"required", {"steps"}}},
          .output_schema = Json{{"type", "object"},
                                {"properties", {{"steps", {{"type", "integer"}}}}},
                                {"required", {"steps"}}},
      },
      [](Json args, tools::ToolContext& ctx) -> asio::awaitable<ToolResult> {
        const auto steps = args.at("steps").get<std::int64_t>();
        const auto interval = args.value("interval_ms", std::int64_t{10});
        asio::steady_timer timer(co_await asio::this_coro::executor);
        for (std::int64_t i = 1; i <= steps; ++i) {
          timer.expires_after(std::chrono::milliseconds(interval));
          co_await timer.async_wait(asio::use_awaitable);
          // A cancel that lands while the timer's completion is already queued
          // does not reach the next wait: check between steps too.
          if (ctx.cancelled()) co_return ToolResult::error("cancelled");
          ctx.progress(static_cast<double>(i), static_cast<double>(steps),
                       fmt::format("step {}", i));
        }
        ToolResult r = ToolResult::text(fmt::format("done {}", steps));
        r.structured = Json{{"steps", steps}};
        co_return r;
      }};
}

tools::Tool fail_tool() {
  return tools::Tool{
      ToolDescriptor{
          .name = "fail",
          .title = "Fail",
          .description = "Always fails with the given message.",
          .input_schema = {{"type", "object"}, {"properties", {{"message", {{"type", "string"}}}}}},
          .output_schema = std::nullopt,
          .annotations = Json::object(),
      },
      [](Json args, tools::ToolContext&) -> asio::awaitable<ToolResult> {
        co_return ToolResult::error(args.value("message", std::string("failed")));
      }};
}

}  // namespace

Result<void> add_test_tools(tools::Registry& registry) {
  for (tools::Tool (*make)() : {echo_tool, add_tool, slow_tool, progress_tool, fail_tool}) {
    BRIG_TRY_VOID(registry.add(make()));
  }
  return {};
}

}  // namespace brig::server::testing
