#include "protocol/outgoing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brig::protocol {
namespace {

std::vector<ToolResult> sample_results() {
  std::vector<ToolResult> results;
  results.push_back(ToolResult::text("hello"));
  results.push_back(ToolResult::error("bad \"input\"\n\ttab"));
  ToolResult structured = ToolResult::text("with structure");
  structured.structured = Json{{"text", "with structure"}, {"n", 3}, {"list", {1.5, nullptr}}};
  results.push_back(structured);
  ToolResult null_structured = ToolResult::text("x");
  null_structured.structured = Json();
  results.push_back(null_structured);
  // Long repeated text (the writer's repeat cache) and invalid UTF-8.
  const std::string long_text(10000, 'z');
  ToolResult repeated = ToolResult::text(long_text + "\xff\xc3");
  repeated.structured = Json{{"text", long_text + "\xff\xc3"}};
  results.push_back(repeated);
  results.push_back(ToolResult{{}, std::nullopt, false});
  // Text blocks held as text and as JSON (with annotations), mixed.
  ToolResult mixed = ToolResult::text("first \"quoted\"\n");
  mixed.content.emplace_back(
      Json{{"type", "text"}, {"text", "second"}, {"annotations", {{"priority", 0.5}}}});
  mixed.add_text("");
  results.push_back(mixed);
  results.push_back(
      ToolResult{{ContentBlock(Json{{"type", "image"}, {"data", "AAAA"}})}, Json::object(), true});
  return results;
}

// tool_result writes exactly what result() makes of the result's JSON.
TEST(Outgoing, ToolResultMatchesTheGenericEncoding) {
  const Outgoing out(ServerInfo{"brig \"test\"", "1.2\n"}, 1u << 20);
  for (const Id& id : {Id(7), Id(-1), Id("req-\"1\"")}) {
    for (Era era : {Era::legacy, Era::modern}) {
      for (const ToolResult& r : sample_results()) {
        SCOPED_TRACE(r.to_json().dump(-1, ' ', false, Json::error_handler_t::replace) +
                     (era == Era::modern ? " modern" : " legacy"));
        const Reply generic = out.result(id, r.to_json(), era, /*tool_call=*/true);
        const Reply direct = out.tool_result(id, ToolResult(r), era);
        EXPECT_EQ(direct.line, generic.line);
        ASSERT_TRUE(direct.standin);
        EXPECT_EQ(out.fallback(direct), out.fallback(generic));
      }
    }
  }
}

TEST(Outgoing, ToolResultOverTheLimitBecomesAStandIn) {
  const Outgoing out(ServerInfo{"brig", "1"}, 64u << 10);
  const Reply big = out.tool_result(Id(1), ToolResult::text(std::string(100000, 'a')), Era::legacy);
  const std::string line = out.single(big);
  EXPECT_LE(line.size(), 64u << 10);
  EXPECT_NE(line.find("result too large to send"), std::string::npos);
  EXPECT_NE(line.find("\"isError\":true"), std::string::npos);
}

}  // namespace
}  // namespace brig::protocol
