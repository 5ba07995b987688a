#include "server/tools/write_file_tool.h"

#include <string>

#include <fmt/format.h>

#include "server/files/utf8.h"
#include "server/files/write_file.h"
#include "server/policy/tool_names.h"
#include "server/tools/denial.h"

namespace brig::tools {

using protocol::Json;

protocol::ToolDescriptor write_file_descriptor() {
  Json input = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"description", std::string("File to write: absolute, or relative to the workspace.") +
                              std::string(files::kNameEscapeNote)}}},
        {"content", {{"type", "string"}, {"description", "The complete new contents (UTF-8)."}}},
        {"create_parents",
         {{"type", "boolean"},
          {"description", "Create missing parent directories. Default false."}}}}},
      {"required", {"path", "content"}},
      {"additionalProperties", false}};
  Json output = {{"type", "object"},
                 {"properties",
                  {{"path", {{"type", "string"}}},
                   {"bytes", {{"type", "integer"}, {"description", "Bytes written."}}},
                   {"created", {{"type", "boolean"}, {"description", "The file is new."}}},
                   {"mode", {{"type", "string"}, {"description", "Permission bits, octal."}}}}},
                 {"required", {"path", "bytes", "created", "mode"}}};
  return protocol::ToolDescriptor{
      .name = std::string(policy::names::kWriteFile),
      .title = "Write file",
      .description =
          "Create a file or replace its whole contents. The write is atomic (a temporary file "
          "in the same directory, then rename), so readers never see half a file, and an "
          "existing file keeps its permissions. For changing part of a file prefer edit_file. "
          "Refuses to write through a symlink (write to its target instead) and fails where "
          "the sandbox policy makes the path read-only; the error names the policy rule." +
          std::string(kJailPrivateNote),
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations =
          protocol::tool_annotations(/*read_only=*/false, /*destructive=*/true, /*idempotent=*/true,
                                     /*open_world=*/false),
  };
}

protocol::ToolResult format_write_file(const Json& /*args*/, files::OpReply reply) {
  const Json& h = reply.header;
  const std::int64_t bytes = h.value("bytes", std::int64_t{0});
  protocol::ToolResult r = protocol::ToolResult::text(
      fmt::format("{} {} ({} byte{}, mode {}).", h.value("created", false) ? "Created" : "Replaced",
                  h.value("path", std::string()), bytes, bytes == 1 ? "" : "s",
                  h.value("mode", std::string())));
  r.structured = h;
  return r;
}

}  // namespace brig::tools
