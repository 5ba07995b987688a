// Registry: the server's tool catalogue, in registration order.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "jail/base/error.h"
#include "server/tools/tool.h"

namespace brig::tools {

class Registry {
 public:
  // Adds tool. Fails, leaving the registry unchanged, on a duplicate name, a
  // name that is not 1–128 of [A-Za-z0-9_.-] (the MCP tool-name rule), an
  // input schema that is not {"type": "object", ...}, or an empty handler.
  Result<void> add(Tool tool);

  // The descriptors in registration order: the session's tools/list.
  std::vector<protocol::ToolDescriptor> list() const;
  // The tool named name; nullptr when there is none.
  const Tool* find(std::string_view name) const;
  // The same, looked up at index in list() first: a session's calls say both.
  const Tool* find(std::size_t index, std::string_view name) const;
  std::size_t size() const { return tools_.size(); }
  // Replaces each tool by wrap(tool), in place; wrap must keep the name
  // (e.g. a handler that also writes the audit log).
  void wrap_all(const std::function<Tool(Tool)>& wrap);

 private:
  std::vector<Tool> tools_;
};

}  // namespace brig::tools
