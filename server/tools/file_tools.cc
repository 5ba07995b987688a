#include "server/tools/file_tools.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "server/tools/denial.h"
#include "server/tools/edit_file_tool.h"
#include "server/tools/find_files_tool.h"
#include "server/tools/list_directory_tool.h"
#include "server/tools/read_file_tool.h"
#include "server/tools/search_tool.h"
#include "server/tools/write_file_tool.h"

namespace brig::tools {
namespace {

using protocol::Json;
using protocol::ToolResult;

using Formatter = ToolResult (*)(const Json& args, files::OpReply reply);

struct FileTool {
  protocol::ToolDescriptor (*descriptor)();
  Formatter format;
  Access access;
  pool::WorkerLane lane;
};

DenialContext denial_context(const sandbox::Sandbox& sandbox) {
  return DenialContext{sandbox.policy, sandbox.policy_name, sandbox.workspace(),
                       sandbox.context.home, sandbox.host_root()};
}

// The model reads this: what failed, then the policy's reason when it has one.
std::string failure_text(const sandbox::Sandbox& sandbox, const Json& args, Access access,
                         const Error& e) {
  std::string text = e.to_string();
  // A worker that never started says nothing about the call's path.
  if (!e.what.starts_with(pool::kWorkerStartFailed)) {
    const std::string path = args.value("path", std::string("."));
    if (auto why = explain_denial(denial_context(sandbox), path, access, e.sys_errno))
      return text + "\n" + *why;
  }
  if (e.sys_errno == EACCES) {
    if (std::string hint = identity_refusal(sandbox); !hint.empty()) text += "\n" + hint;
  }
  return text;
}

Tool make_tool(const FileTool& t, Principals& principals, FileToolLimits limits) {
  protocol::ToolDescriptor descriptor = t.descriptor();
  std::string op = descriptor.name;
  return Tool{
      std::move(descriptor),
      [t, op, &principals, limits](Json args, ToolContext& ctx) -> asio::awaitable<ToolResult> {
        auto principal = principals.of(ctx.principal());
        if (!principal) co_return ToolResult::error(principal.error().to_string());
        if (principal->workers == nullptr)
          co_return ToolResult::error("run " + op + ": this server runs no file workers");
        const std::string path = args.value("path", std::string("."));
        if (auto why = jail_private_refusal(denial_context(principal->sandbox), path))
          co_return ToolResult::error(op + " (" + path + "): " + *why);
        Result<files::OpReply> reply = co_await principal->workers->call(
            t.lane, op, args, limits.timeout, limits.max_bytes, ctx.connection(),
            pool::ReplyRoom{.full = [&ctx] { return ctx.output_backlogged(); },
                            .drained = [&ctx] { return ctx.room_for_reply(); }});
        if (!reply) {
          co_return ToolResult::error(
              failure_text(principal->sandbox, args, t.access, reply.error()));
        }
        co_return t.format(args, std::move(*reply));
      }};
}

}  // namespace

Result<void> register_file_tools(Registry& registry, Principals& principals,
                                 FileToolLimits limits) {
  const FileTool tools[] = {
      {read_file_descriptor, format_read_file, Access::read, pool::WorkerLane::files},
      {write_file_descriptor, format_write_file, Access::write, pool::WorkerLane::files},
      {edit_file_descriptor, format_edit_file, Access::write, pool::WorkerLane::files},
      {list_directory_descriptor, format_list_directory, Access::read, pool::WorkerLane::files},
      {find_files_descriptor, format_find_files, Access::read, pool::WorkerLane::search},
      {search_descriptor, format_search, Access::read, pool::WorkerLane::search},
  };
  const auto& disabled = principals.own().policy.disabled_tools;
  for (const FileTool& t : tools) {
    Tool tool = make_tool(t, principals, limits);
    if (std::find(disabled.begin(), disabled.end(), tool.descriptor.name) != disabled.end())
      continue;
    BRIG_TRY_VOID(registry.add(std::move(tool)));
  }
  return {};
}

}  // namespace brig::tools
