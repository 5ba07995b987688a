#include "protocol/schema_check.h"

#include <gtest/gtest.h>

namespace brig::protocol {
namespace {

const Json kSchema = Json::parse(R"({
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "maxLength": 4},
    "count": {"type": "integer", "minimum": 1, "maximum": 10},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "mode": {"enum": ["fast", "slow"]},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
    "env": {"type": "object", "additionalProperties": {"type": "string"}},
    "nullable": {"type": ["string", "null"]},
    "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    "either": {"anyOf": [{"type": "boolean"}, {"type": "integer", "minimum": 5}]},
    "fixed": {"const": 3},
    "notnull": {"not": {"type": "null"}}
  },
  "required": ["command"],
  "additionalProperties": false
})");

std::optional<std::string> check(const char* args) {
  return check_schema(Json::parse(args), kSchema);
}

TEST(SchemaCheck, ValidArgumentsPass) {
  EXPECT_EQ(check(R"({"command":"ls"})"), std::nullopt);
  EXPECT_EQ(check(R"({"command":"ls","count":10,"ratio":0.5,"mode":"fast","tags":["a"],
                     "env":{"A":"b"},"nullable":null,"pick":2,"either":true,"fixed":3,
                     "notnull":0})"),
            std::nullopt);
  EXPECT_EQ(check(R"({"command":"ls","count":2.0})"), std::nullopt);  // 2.0 is an integer
  EXPECT_EQ(check(R"({"command":"åäöü"})"), std::nullopt);            // 4 characters, 8 bytes
}

TEST(SchemaCheck, EachViolationNamesTheField) {
  EXPECT_EQ(check(R"({})"), "arguments.command: required property missing");
  EXPECT_EQ(check(R"({"command":5})"), "arguments.command: expected string, got integer");
  EXPECT_EQ(check(R"({"command":"ls","count":"3"})"),
            "arguments.count: expected integer, got string");
  EXPECT_EQ(check(R"({"command":"ls","count":1.5})"),
            "arguments.count: expected integer, got number");
  EXPECT_EQ(check(R"({"command":"ls","count":0})"), "arguments.count: must be >= 1, got 0");
  EXPECT_EQ(check(R"({"command":"ls","count":11})"), "arguments.count: must be <= 10, got 11");
  EXPECT_EQ(check(R"({"command":"ls","ratio":1})"), "arguments.ratio: must be < 1, got 1");
  EXPECT_EQ(check(R"({"command":"ls","ratio":0})"), "arguments.ratio: must be > 0, got 0");
  EXPECT_EQ(check(R"({"command":""})"), "arguments.command: must be at least 1 characters long");
  EXPECT_EQ(check(R"({"command":"abcde"})"),
            "arguments.command: must be at most 4 characters long");
  EXPECT_EQ(check(R"({"command":"ls","mode":"medium"})"),
            R"(arguments.mode: must be one of ["fast","slow"], got "medium")");
  EXPECT_EQ(check(R"({"command":"ls","tags":["a",1]})"),
            "arguments.tags[1]: expected string, got integer");
  EXPECT_EQ(check(R"({"command":"ls","tags":[]})"), "arguments.tags: must have at least 1 items");
  EXPECT_EQ(check(R"({"command":"ls","tags":["a","b","c"]})"),
            "arguments.tags: must have at most 2 items");
  EXPECT_EQ(check(R"({"command":"ls","env":{"A":1}})"),
            "arguments.env.A: expected string, got integer");
  EXPECT_EQ(check(R"({"command":"ls","extra":1})"), "arguments.extra: unknown property");
  EXPECT_EQ(check(R"({"command":"ls","nullable":1})"),
            "arguments.nullable: expected string or null, got integer");
  EXPECT_EQ(check(R"({"command":"ls","pick":true})"),
            "arguments.pick: must match exactly one of oneOf, matches 0");
  EXPECT_EQ(check(R"({"command":"ls","either":2})"),
            "arguments.either: matches none of anyOf (first: arguments.either: expected boolean, "
            "got integer)");
  EXPECT_EQ(check(R"({"command":"ls","fixed":4})"), "arguments.fixed: must be 3, got 4");
  EXPECT_EQ(check(R"({"command":"ls","notnull":null})"),
            "arguments.notnull: matches a schema it must not match");
  EXPECT_EQ(check(R"([])"), "arguments: expected object, got array");
}

TEST(SchemaCheck, BooleanAndEmptySchemas) {
  EXPECT_EQ(check_schema(Json(1), Json(true)), std::nullopt);
  EXPECT_EQ(check_schema(Json(1), Json::object()), std::nullopt);
  EXPECT_EQ(check_schema(Json(1), Json(false), "x"), "x: not allowed");
  EXPECT_EQ(
      check_schema(Json{{"a", 1}}, Json::parse(R"({"type":"object","properties":{"a":false}})")),
      "arguments.a: not allowed");
}

TEST(SchemaCheck, AllOfAndUnknownKeywords) {
  Json schema = Json::parse(
      R"({"allOf":[{"type":"integer"},{"minimum":3}],"format":"weird","pattern":"^x$"})");
  EXPECT_EQ(check_schema(Json(3), schema), std::nullopt);
  EXPECT_EQ(check_schema(Json(2), schema), "arguments: must be >= 3, got 2");
}

}  // namespace
}  // namespace brig::protocol
