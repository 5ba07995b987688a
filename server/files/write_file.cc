#include "server/files/write_file.h"

#include <fmt/format.h>

#include "server/files/atomic_write.h"
#include "server/files/tool_path.h"
#include "server/files/utf8.h"

namespace brig::files {

using protocol::Json;

Result<OpReply> write_file_op(const Json& args, const OpContext& ctx) {
  const std::string path =
      BRIG_TRY(resolve_path(ctx.workspace, args.value("path", std::string()), "write file"));
  const std::string content = args.value("content", std::string());
  WriteOptions options;
  options.create_parents = args.value("create_parents", false);
  const std::string suffix = args.value(std::string(kTempSuffixArg), std::string());
  options.temp_suffix = suffix;
  const WriteOutcome done = BRIG_TRY(atomic_write(path, content, options));
  Json header = {{"path", name_to_text(path)},
                 {"bytes", content.size()},
                 {"created", done.created},
                 {"mode", fmt::format("{:04o}", done.mode)}};
  return OpReply{std::move(header), {}};
}

Result<OpReply> sweep_temps_op(const Json& args, const OpContext& ctx) {
  const std::string path =
      BRIG_TRY(resolve_path(ctx.workspace, args.value("path", std::string()), "sweep beside"));
  const TempRemoval done =
      remove_temp(path, args.value(std::string(kTempSuffixArg), std::string()));
  return OpReply{Json{{"path", name_to_text(path)},
                      {"gone", done == TempRemoval::gone},
                      {"held", done == TempRemoval::held}},
                 {}};
}

}  // namespace brig::files
