#include "server/tools/registry.h"

#include <algorithm>
#include <utility>

namespace brig::tools {
namespace {

bool valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

}  // namespace

Result<void> Registry::add(Tool tool) {
  const std::string& name = tool.descriptor.name;
  if (!valid_tool_name(name)) {
    return std::unexpected(
        Error{"register tool", name, "a tool name is 1 to 128 characters of A-Z a-z 0-9 _ - ."});
  }
  if (find(name) != nullptr) {
    return std::unexpected(Error{"register tool", name, "a tool with this name already exists"});
  }
  const protocol::Json& schema = tool.descriptor.input_schema;
  if (!schema.is_object() || schema.value("type", protocol::Json()) != "object") {
    return std::unexpected(Error{"register tool", name,
                                 "the input schema must be an object with \"type\": \"object\""});
  }
  if (!tool.handler) {
    return std::unexpected(Error{"register tool", name, "the tool has no handler"});
  }
  tools_.push_back(std::move(tool));
  return {};
}

std::vector<protocol::ToolDescriptor> Registry::list() const {
  std::vector<protocol::ToolDescriptor> out;
  out.reserve(tools_.size());
  for (const Tool& t : tools_) out.push_back(t.descriptor);
  return out;
}

const Tool* Registry::find(std::string_view name) const {
  for (const Tool& t : tools_) {
    if (t.descriptor.name == name) return &t;
  }
  return nullptr;
}

const Tool* Registry::find(std::size_t index, std::string_view name) const {
  if (index < tools_.size() && tools_[index].descriptor.name == name) return &tools_[index];
  return find(name);
}

void Registry::wrap_all(const std::function<Tool(Tool)>& wrap) {
  for (Tool& tool : tools_) tool = wrap(std::move(tool));
}

}  // namespace brig::tools
