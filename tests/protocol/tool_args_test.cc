#include "protocol/tool_args.h"

#include <gtest/gtest.h>

#include "protocol/schema_check.h"

namespace brig::protocol {
namespace {

constexpr IntegerArg kOffset{"offset", 1, 1000, 7};

Json parsed(const char* text) {
  return Json::parse(text);
}

TEST(IntegerArg, AbsentIsTheFallbackAndIntegersInRangeAreRead) {
  EXPECT_EQ(kOffset.read(Json::object()), 7);
  EXPECT_EQ(kOffset.read(Json{{"offset", 1}}), 1);
  EXPECT_EQ(kOffset.read(Json{{"offset", 1000}}), 1000);
  // JSON Schema counts 5.0 as an integer.
  EXPECT_EQ(kOffset.read(parsed(R"({"offset": 5.0})")), 5);
}

// Issue 15: numbers beyond 64 bits came out as 0 or 1 (a float-to-integer
// conversion that is undefined behaviour), negatives and fractions slipped
// through as clamped values.
TEST(IntegerArg, AnythingElseIsAnErrorNamingTheArgumentAndItsRange) {
  for (const char* text :
       {R"({"offset": 1e30})", R"({"offset": -1e30})", R"({"offset": 18446744073709551616})",
        R"({"offset": 18446744073709551615})", R"({"offset": 9223372036854775807})",
        R"({"offset": -1})", R"({"offset": 0})", R"({"offset": 1001})", R"({"offset": 2.5})",
        R"({"offset": "3"})", R"({"offset": null})", R"({"offset": true})"}) {
    const auto r = kOffset.read(parsed(text));
    ASSERT_FALSE(r) << text << " read as " << *r;
    const std::string message = r.error().to_string();
    EXPECT_NE(message.find("offset"), std::string::npos) << message;
    EXPECT_NE(message.find("from 1 to 1000"), std::string::npos) << message;
  }
}

TEST(IntegerArg, TheSchemaAnnouncesTheRangeThatIsRead) {
  const Json schema = {{"type", "object"}, {"properties", {{"offset", kOffset.schema("d")}}}};
  EXPECT_EQ(schema["properties"]["offset"]["minimum"], 1);
  EXPECT_EQ(schema["properties"]["offset"]["maximum"], 1000);
  EXPECT_EQ(schema["properties"]["offset"]["description"], "d");
  for (const char* text : {R"({"offset": 1e30})", R"({"offset": 0})", R"({"offset": 2.5})"}) {
    const auto why = check_schema(parsed(text), schema);
    ASSERT_TRUE(why) << text;
    EXPECT_NE(why->find("arguments.offset"), std::string::npos) << *why;
  }
  EXPECT_FALSE(check_schema(parsed(R"({"offset": 1000})"), schema));
}

}  // namespace
}  // namespace brig::protocol
