#include "server/tools/registry.h"

#include <gtest/gtest.h>

#include "tests/server/test_tools.h"

namespace brig::tools {
namespace {

using protocol::Json;

Tool make_tool(std::string name, Json schema = Json{{"type", "object"}}) {
  return Tool{protocol::ToolDescriptor{.name = std::move(name),
                                       .title = "",
                                       .description = "",
                                       .input_schema = std::move(schema),
                                       .output_schema = std::nullopt,
                                       .annotations = Json::object()},
              [](Json, ToolContext&) -> asio::awaitable<protocol::ToolResult> {
                co_return protocol::ToolResult::text("ok");
              }};
}

TEST(Registry, ListsToolsInRegistrationOrder) {
  Registry r;
  ASSERT_TRUE(r.add(make_tool("zeta")));
  ASSERT_TRUE(r.add(make_tool("alpha")));
  ASSERT_TRUE(r.add(make_tool("mid.dle-1_x")));
  std::vector<std::string> names;
  for (const auto& d : r.list()) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"zeta", "alpha", "mid.dle-1_x"}));
  ASSERT_NE(r.find("alpha"), nullptr);
  EXPECT_EQ(r.find("alpha")->descriptor.name, "alpha");
  EXPECT_EQ(r.find("beta"), nullptr);
}

TEST(Registry, RejectsADuplicateNameAndKeepsTheFirst) {
  Registry r;
  ASSERT_TRUE(r.add(make_tool("echo")));
  auto again = r.add(make_tool("echo", Json{{"type", "object"}, {"required", {"x"}}}));
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().why.find("already exists"), std::string::npos);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_FALSE(r.find("echo")->descriptor.input_schema.contains("required"));
}

TEST(Registry, RejectsBadNamesSchemasAndMissingHandlers) {
  Registry r;
  EXPECT_FALSE(r.add(make_tool("")));
  EXPECT_FALSE(r.add(make_tool("has space")));
  EXPECT_FALSE(r.add(make_tool("slash/y")));
  EXPECT_FALSE(r.add(make_tool(std::string(129, 'a'))));
  EXPECT_TRUE(r.add(make_tool(std::string(128, 'a'))));
  EXPECT_FALSE(r.add(make_tool("arr", Json{{"type", "array"}})));
  EXPECT_FALSE(r.add(make_tool("notobj", Json("object"))));
  Tool no_handler = make_tool("nohandler");
  no_handler.handler = nullptr;
  EXPECT_FALSE(r.add(std::move(no_handler)));
  EXPECT_EQ(r.size(), 1u);
}

TEST(Registry, TestToolsRegisterInContractOrder) {
  Registry r;
  ASSERT_TRUE(server::testing::add_test_tools(r));
  std::vector<std::string> names;
  for (const auto& d : r.list()) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"echo", "add", "slow", "progress", "fail"}));
  EXPECT_FALSE(server::testing::add_test_tools(r)) << "a second set must collide";
}

}  // namespace
}  // namespace brig::tools
