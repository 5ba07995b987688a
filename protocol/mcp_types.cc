#include "protocol/mcp_types.h"

#include <array>

namespace brig::protocol {

Json ServerInfo::to_json() const {
  return Json{{"name", name}, {"version", version}};
}

Json tool_annotations(bool read_only, bool destructive, bool idempotent, bool open_world) {
  return {{"readOnlyHint", read_only},
          {"destructiveHint", destructive},
          {"idempotentHint", idempotent},
          {"openWorldHint", open_world}};
}

Json ToolDescriptor::to_json() const {
  Json j{{"name", name}};
  if (!title.empty()) j["title"] = title;
  if (!description.empty()) j["description"] = description;
  j["inputSchema"] = input_schema;
  if (output_schema) j["outputSchema"] = *output_schema;
  if (annotations.is_object() && !annotations.empty()) j["annotations"] = annotations;
  return j;
}

ContentBlock ContentBlock::text(std::string text) {
  return ContentBlock(std::move(text));
}

Json ContentBlock::to_json() const {
  if (const Json* block = json()) return *block;
  Json block = Json::object();
  auto& members = block.get_ref<Json::object_t&>();
  members.emplace("text", *plain_text());
  members.emplace("type", "text");
  return block;
}

ToolResult ToolResult::text(std::string text) {
  ToolResult r;
  r.add_text(std::move(text));
  return r;
}

ToolResult ToolResult::error(std::string text) {
  ToolResult r = ToolResult::text(std::move(text));
  r.is_error = true;
  return r;
}

Json ToolResult::content_json() const {
  Json array = Json::array();
  for (const ContentBlock& block : content) array.push_back(block.to_json());
  return array;
}

Json ToolResult::to_json() const {
  Json j = Json::object();
  j["content"] = content_json();
  if (structured) j["structuredContent"] = *structured;
  j["isError"] = is_error;
  return j;
}

namespace {

constexpr std::array<std::string_view, 8> kLevelNames = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view text) {
  for (std::size_t i = 0; i < kLevelNames.size(); ++i) {
    if (kLevelNames[i] == text) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

std::string_view to_string(LogLevel level) {
  return kLevelNames[static_cast<std::size_t>(level)];
}

}  // namespace brig::protocol
