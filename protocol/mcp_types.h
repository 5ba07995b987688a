// The MCP value types brig's tools and server exchange with the session:
// server identity, tool descriptors, tool results, log levels.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/json_rpc.h"

namespace brig::protocol {

// Who brig is: serverInfo (legacy initialize) and
// _meta["io.modelcontextprotocol/serverInfo"] (modern results).
struct ServerInfo {
  std::string name;
  std::string version;

  // {"name": ..., "version": ...}
  Json to_json() const;
};

// One entry of tools/list. Empty title/description are left out of the JSON;
// input_schema must be an object schema ({"type":"object", ...}); an empty
// output_schema or empty annotations object is left out.
struct ToolDescriptor {
  std::string name;
  std::string title;
  std::string description;
  Json input_schema = Json{{"type", "object"}};
  std::optional<Json> output_schema;
  Json annotations = Json::object();

  // The Tool object of tools/list (name, title, description, inputSchema, ...).
  Json to_json() const;
};

// A tool's annotations object: hints for clients about what calling it does
// (MCP ToolAnnotations), not guarantees.
Json tool_annotations(bool read_only, bool destructive, bool idempotent, bool open_world);

// One block of a tool result's content. A text block, what nearly every
// tool returns, is held as its text: built as a JSON object it cost seven
// allocations and as many frees on every call. Any other block (image,
// audio, resource, or text with annotations) is held as MCP's JSON object.
class ContentBlock {
 public:
  // {"type": "text", "text": text}
  static ContentBlock text(std::string text);
  // A block given as MCP's JSON object, kept as it is.
  explicit ContentBlock(Json block) : value_(std::move(block)) {}

  // The text of a block made by text(); null for one held as JSON.
  const std::string* plain_text() const { return std::get_if<std::string>(&value_); }
  // The object of a block held as JSON; null for one made by text().
  const Json* json() const { return std::get_if<Json>(&value_); }
  // The block as a JSON object, whichever way it is held.
  Json to_json() const;

 private:
  explicit ContentBlock(std::string text) : value_(std::move(text)) {}

  std::variant<std::string, Json> value_;
};

// What a tool handler returns: content blocks, optional structured content,
// and whether the tool failed (isError: the model sees it and can retry).
struct ToolResult {
  std::vector<ContentBlock> content;
  std::optional<Json> structured;  // structuredContent; empty: left out
  bool is_error = false;

  // A successful result holding one text block.
  static ToolResult text(std::string text);
  // A failed result (isError: true) holding one text block that says why.
  static ToolResult error(std::string text);

  // Appends a text block.
  void add_text(std::string text) { content.push_back(ContentBlock::text(std::move(text))); }

  // The CallToolResult object without era decoration (content, isError,
  // structuredContent).
  Json to_json() const;
  // content as a JSON array.
  Json content_json() const;
};

// MCP / syslog severities, least severe first, so `a >= b` means a is at
// least as severe as b.
enum class LogLevel { debug, info, notice, warning, error, critical, alert, emergency };

// The level named by text ("debug" ... "emergency"); empty for anything else.
std::optional<LogLevel> parse_log_level(std::string_view text);
// The wire name of a level.
std::string_view to_string(LogLevel level);

}  // namespace brig::protocol
