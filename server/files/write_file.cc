#include "server/files/write_file.h"

#include <fmt/format.h>

#include "server/files/atomic_write.h"
#include "server/files/tool_path.h"

namespace brig::files {

using protocol::Json;

Result<worker::OpReply> write_file_op(const Json& args, const worker::OpContext& ctx) {
  const std::string path =
      BRIG_TRY(resolve_path(ctx.workspace, args.value("path", std::string()), "write file"));
  const std::string content = args.value("content", std::string());
  WriteOptions options;
  options.create_parents = args.value("create_parents", false);
  const WriteOutcome done = BRIG_TRY(atomic_write(path, content, options));
  Json header = {{"path", path},
                 {"bytes", content.size()},
                 {"created", done.created},
                 {"mode", fmt::format("{:04o}", done.mode)}};
  return worker::OpReply{std::move(header), {}};
}

protocol::ToolDescriptor write_file_descriptor() {
  Json input = {
      {"type", "object"},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"description", "File to write: absolute, or relative to the workspace."}}},
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
      .name = "write_file",
      .title = "Write file",
      .description =
          "Create a file or replace its whole contents. The write is atomic (a temporary file "
          "in the same directory, then rename), so readers never see half a file, and an "
          "existing file keeps its permissions. For changing part of a file prefer edit_file. "
          "Refuses to write through a symlink (write to its target instead) and fails where "
          "the sandbox policy makes the path read-only; the error names the policy rule.",
      .input_schema = std::move(input),
      .output_schema = std::move(output),
      .annotations =
          protocol::tool_annotations(/*read_only=*/false, /*destructive=*/true, /*idempotent=*/true,
                                     /*open_world=*/false),
  };
}

protocol::ToolResult format_write_file(const Json& /*args*/, worker::OpReply reply) {
  const Json& h = reply.header;
  const std::int64_t bytes = h.value("bytes", std::int64_t{0});
  protocol::ToolResult r = protocol::ToolResult::text(
      fmt::format("{} {} ({} byte{}, mode {}).", h.value("created", false) ? "Created" : "Replaced",
                  h.value("path", std::string()), bytes, bytes == 1 ? "" : "s",
                  h.value("mode", std::string())));
  r.structured = h;
  return r;
}

}  // namespace brig::files
