// Descriptors and formatters: plain schemas, and structuredContent that
// matches each tool's outputSchema.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/schema_check.h"
#include "protocol/tool_args.h"
#include "server/files/edit_file.h"
#include "server/files/read_file.h"
#include "server/files/write_file.h"
#include "server/tools/edit_file_tool.h"
#include "server/tools/find_files_tool.h"
#include "server/tools/list_directory_tool.h"
#include "server/tools/read_file_tool.h"
#include "server/tools/search_tool.h"
#include "server/tools/write_file_tool.h"
#include "tests/server/files/temp_dir.h"

namespace brig::tools {
namespace {

using files::testing::context_for;
using files::testing::TempDir;
using protocol::Json;
using protocol::ToolDescriptor;
using protocol::ToolResult;

// Every array schema has items; no $ref-style keywords.
void expect_plain(const Json& schema, const std::string& where) {
  if (schema.is_object()) {
    if (schema.value("type", Json()) == "array") {
      EXPECT_TRUE(schema.contains("items")) << where;
    }
    for (const char* k : {"$ref", "$dynamicRef", "$defs"}) {
      EXPECT_FALSE(schema.contains(k)) << where;
    }
    for (const auto& [k, v] : schema.items()) expect_plain(v, where + "." + k);
  } else if (schema.is_array()) {
    for (const Json& v : schema) expect_plain(v, where);
  }
}

// Every string in j, at any depth.
void collect_strings(const Json& j, std::vector<std::string>& out) {
  if (j.is_string()) out.push_back(j.get<std::string>());
  if (j.is_structured())
    for (const Json& v : j) collect_strings(v, out);
}

// Issue 16: no text block of the result is repeated in structuredContent.
void expect_one_copy(const ToolDescriptor& d, const ToolResult& r) {
  std::vector<std::string> strings;
  collect_strings(*r.structured, strings);
  for (const protocol::ContentBlock& c : r.content) {
    const Json block = c.to_json();
    const std::string text = block.value("text", std::string());
    if (text.size() < 8) continue;
    for (const std::string& s : strings)
      EXPECT_EQ(s.find(text), std::string::npos) << d.name << " repeats " << block.dump();
  }
}

void expect_matches_output(const ToolDescriptor& d, const ToolResult& r) {
  ASSERT_TRUE(r.structured) << d.name;
  ASSERT_TRUE(d.output_schema) << d.name;
  const auto problem = protocol::check_schema(*r.structured, *d.output_schema, "structured");
  EXPECT_FALSE(problem) << d.name << ": " << problem.value_or("");
  ASSERT_FALSE(r.content.empty());
  EXPECT_FALSE(r.is_error);
  expect_one_copy(d, r);
}

TEST(Descriptors, NamedPlainAndAnnotated) {
  const std::vector<std::pair<std::string, ToolDescriptor>> all = {
      {"read_file", read_file_descriptor()},
      {"write_file", write_file_descriptor()},
      {"edit_file", edit_file_descriptor()}};
  for (const auto& [name, d] : all) {
    EXPECT_EQ(d.name, name);
    EXPECT_FALSE(d.description.empty());
    EXPECT_EQ(d.input_schema["type"], "object");
    expect_plain(d.input_schema, name + ".input");
    ASSERT_TRUE(d.output_schema);
    expect_plain(*d.output_schema, name + ".output");
    for (const char* hint : {"readOnlyHint", "destructiveHint", "openWorldHint"})
      EXPECT_TRUE(d.annotations.contains(hint)) << name << " " << hint;
  }
  EXPECT_EQ(read_file_descriptor().annotations["readOnlyHint"], true);
  EXPECT_EQ(write_file_descriptor().annotations["destructiveHint"], true);
}

// Issue 15: an integer argument without a maximum let 1e30 through to a
// float-to-integer conversion. Every integer a file tool takes is bounded
// (protocol::IntegerArg), so the schema refuses what the handler cannot hold.
TEST(Descriptors, EveryIntegerArgumentHasARange) {
  for (const ToolDescriptor& d :
       {read_file_descriptor(), write_file_descriptor(), edit_file_descriptor(),
        list_directory_descriptor(), find_files_descriptor(), search_descriptor()}) {
    for (const auto& [name, property] : d.input_schema["properties"].items()) {
      if (property.value("type", Json()) != "integer") continue;
      ASSERT_TRUE(property.contains("minimum")) << d.name << "." << name;
      ASSERT_TRUE(property.contains("maximum")) << d.name << "." << name;
      EXPECT_LE(property["maximum"].get<std::int64_t>(), protocol::kMaxJsonInteger)
          << d.name << "." << name;
      const auto why = protocol::check_schema(Json(1e30), property, "arguments." + name);
      ASSERT_TRUE(why) << d.name << "." << name;
      EXPECT_NE(why->find("arguments." + name), std::string::npos) << *why;
    }
  }
}

TEST(Formatters, StructuredContentMatchesTheOutputSchema) {
  TempDir dir;
  dir.write("a.txt", "alpha\nbeta\n");
  dir.write("p.gif", "GIF89a\x01\x00");
  dir.write("bin", std::string("\0\1\2", 3));
  const auto ctx = context_for(dir);

  for (const Json& args : {Json{{"path", "a.txt"}}, Json{{"path", "p.gif"}},
                           Json{{"path", "bin"}, {"encoding", "base64"}}}) {
    auto r = files::read_file_op(args, ctx);
    ASSERT_TRUE(r) << args.dump();
    expect_matches_output(read_file_descriptor(), format_read_file(args, std::move(*r)));
  }
  const Json write_args = {{"path", "w.txt"}, {"content", "x"}};
  auto w = files::write_file_op(write_args, ctx);
  ASSERT_TRUE(w);
  const ToolResult wr = format_write_file(write_args, std::move(*w));
  expect_matches_output(write_file_descriptor(), wr);
  EXPECT_EQ(wr.content[0].to_json()["text"], "Created " + dir.at("w.txt") + " (1 byte, mode " +
                                                 (*wr.structured)["mode"].get<std::string>() +
                                                 ").");

  const Json edit_args = {{"path", "a.txt"},
                          {"edits", {{{"old_text", "beta"}, {"new_text", "gamma"}}}}};
  auto e = files::edit_file_op(edit_args, ctx);
  ASSERT_TRUE(e);
  const ToolResult er = format_edit_file(edit_args, std::move(*e));
  expect_matches_output(edit_file_descriptor(), er);
  EXPECT_NE(
      er.content.back().to_json()["text"].get<std::string>().find("1 replacement, +1 -1 lines"),
      std::string::npos);
}

TEST(Formatters, ReadFileTextIsTheFileAndNotesGoApart) {
  TempDir dir;
  dir.write("a.txt", "1\n2\n3\n4\n");
  const Json args = {{"path", "a.txt"}, {"offset", 2}, {"limit", 2}};
  auto r = files::read_file_op(args, context_for(dir));
  ASSERT_TRUE(r);
  const ToolResult result = format_read_file(args, std::move(*r));
  ASSERT_EQ(result.content.size(), 2u);
  EXPECT_EQ(result.content[0].to_json()["text"], "2\n3\n");
  EXPECT_EQ(result.content[1].to_json()["text"], "Lines 2-3 of 4 in " + dir.at("a.txt") + ".");
}

}  // namespace
}  // namespace brig::tools
