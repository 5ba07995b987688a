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

TEST(SchemaCheck, OddKeywordValuesReadAsBefore) {
  auto check_with = [](const char* schema, const Json& value) {
    return check_schema(value, Json::parse(schema));
  };
  // A type list without names matches nothing; an unknown type name neither.
  EXPECT_EQ(check_with(R"({"type":[1,2]})", Json(1)), "arguments: expected , got integer");
  EXPECT_EQ(check_with(R"({"type":"text"})", Json("a")), "arguments: expected text, got string");
  EXPECT_EQ(check_with(R"({"type":["text",7,"string"]})", Json(1)),
            "arguments: expected text or string, got integer");
  EXPECT_EQ(check_with(R"({"type":5})", Json(1)), std::nullopt);
  // Keywords of the wrong kind are ignored: non-array enum, negative or
  // fractional counts, non-numeric bounds, non-object properties.
  EXPECT_EQ(check_with(R"({"enum":"a","minLength":-1,"maxLength":1.5})", Json("abc")),
            std::nullopt);
  EXPECT_EQ(check_with(R"({"minimum":"5","properties":[{"a":false}]})", Json(1)), std::nullopt);
  EXPECT_EQ(check_with(R"({"const":null})", Json(0)), "arguments: must be null, got 0");
  EXPECT_EQ(check_with(R"({"enum":[1,"a"]})", Json(1.0)), std::nullopt);  // 1 == 1.0
  // Empty anyOf passes, empty oneOf matches none; a non-object `not` matches all.
  EXPECT_EQ(check_with(R"({"anyOf":[]})", Json(1)), std::nullopt);
  EXPECT_EQ(check_with(R"({"oneOf":[]})", Json(1)),
            "arguments: must match exactly one of oneOf, matches 0");
  EXPECT_EQ(check_with(R"({"oneOf":[true,{}]})", Json(1)),
            "arguments: must match exactly one of oneOf, matches 2");
  EXPECT_EQ(check_with(R"({"not":5})", Json(1)), "arguments: matches a schema it must not match");
  // additionalProperties: true and non-schemas accept, a schema checks.
  EXPECT_EQ(check_with(R"({"additionalProperties":true})", Json{{"a", 1}}), std::nullopt);
  EXPECT_EQ(check_with(R"({"additionalProperties":3})", Json{{"a", 1}}), std::nullopt);
  EXPECT_EQ(check_with(R"({"properties":{"b":{}},"additionalProperties":{"type":"string"}})",
                       Json{{"a", 1}, {"b", 2}}),
            "arguments.a: expected string, got integer");
  // Paths through arrays of objects; the required check comes before members.
  EXPECT_EQ(check_with(R"({"items":{"properties":{"k":{"maximum":1}},"required":["r"]}})",
                       Json::parse(R"([{"r":1},{"k":2}])")),
            "arguments[1].r: required property missing");
  EXPECT_EQ(check_with(R"({"items":{"properties":{"k":{"maximum":1.5}}}})",
                       Json::parse(R"([{"k":1},{"k":2}])")),
            "arguments[1].k: must be <= 1.5, got 2");
}

// A checker is read once and used for every call: its answers must not
// depend on what it checked before.
TEST(SchemaCheck, OneCheckerAnswersEveryValueTheSame) {
  const SchemaChecker checker(kSchema);
  const std::vector<std::pair<const char*, std::optional<std::string>>> cases = {
      {R"({"command":"ls"})", std::nullopt},
      {R"({})", "arguments.command: required property missing"},
      {R"({"command":"ls","tags":["a",1]})", "arguments.tags[1]: expected string, got integer"},
      {R"({"command":"ls","env":{"A":1}})", "arguments.env.A: expected string, got integer"},
      {R"({"command":"ls","extra":1})", "arguments.extra: unknown property"},
      {R"({"command":"ls","either":2})",
       "arguments.either: matches none of anyOf (first: arguments.either: expected boolean, got "
       "integer)"},
      {R"({"command":"ls","count":2.0})", std::nullopt},
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& [args, want] = cases[pass == 0 ? i : cases.size() - 1 - i];
      SCOPED_TRACE(args);
      EXPECT_EQ(checker.check(Json::parse(args)), want);
      EXPECT_EQ(check_schema(Json::parse(args), kSchema), want);
    }
  }
  EXPECT_EQ(checker.check(Json::parse("{}"), "p"), "p.command: required property missing");
}

}  // namespace
}  // namespace brig::protocol
