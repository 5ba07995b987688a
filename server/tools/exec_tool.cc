// The `exec` tool: one command, one fresh jail. The call follows the job
// until it ends or yield_after passes; then the job lives on for `job`.
#include <cerrno>

#include <fmt/format.h>

#include "server/exec/exec_args.h"
#include "server/exec/follow.h"
#include "server/exec/job_result.h"
#include "server/exec/launch.h"
#include "server/policy/tool_names.h"
#include "server/policy/units.h"
#include "server/tools/exec_tools.h"

namespace brig::tools {
namespace {

using protocol::Json;
using protocol::ToolResult;

std::string wall_time_text(const policy::Policy& p) {
  return p.limits.wall_time ? policy::format_duration(*p.limits.wall_time) : "none";
}

Json input_schema(const policy::Policy& p) {
  return Json{
      {"type", "object"},
      {"properties",
       {
           {"command",
            {{"type", "string"},
             {"minLength", 1},
             {"description", "A shell command line, run by /bin/sh -c. Give this or argv."}}},
           {"argv",
            {{"type", "array"},
             {"items", {{"type", "string"}}},
             {"minItems", 1},
             {"description", "The program and its arguments, run without a shell."}}},
           {"cwd",
            {{"type", "string"},
             {"description",
              "Working directory: absolute, or relative to the workspace (default: the "
              "workspace); a name as the file tools list it."}}},
           {"env",
            {{"type", "object"},
             {"additionalProperties", {{"type", "string"}}},
             {"description", "Environment variables added to the sandbox's own."}}},
           {"stdin",
            {{"type", "string"}, {"description", "Text for the command's stdin (default: none)."}}},
           {"stdin_open",
            {{"type", "boolean"},
             {"description",
              "Keep stdin open after `stdin` so that the job tool can write more (action "
              "\"write\", eof to close it)."}}},
           {"timeout",
            {{"type", "number"},
             {"exclusiveMinimum", 0},
             {"description", fmt::format("Seconds until the whole sandbox is killed (default "
                                         "and most: the policy's {}).",
                                         wall_time_text(p))}}},
           {"max_output", exec::kMaxOutputArg.schema(fmt::format(
                              "Bytes of stdout and of stderr to return (default {}); longer "
                              "output keeps its head and tail.",
                              exec::kDefaultMaxOutput))},
           {"yield_after",
            {{"type", "number"},
             {"minimum", 0},
             {"maximum", exec::kMaxYieldAfter.count() / 1000},
             {"description",
              fmt::format("Seconds to wait before returning while the command keeps running as "
                          "a job (default {}).",
                          exec::kDefaultYieldAfter.count() / 1000)}}},
       }},
      {"additionalProperties", false},
  };
}

std::string description(const sandbox::Sandbox& sandbox) {
  return fmt::format(
      "Run a command in a fresh sandbox (policy \"{}\": the workspace {} and what the policy "
      "allows; network: {}). Give `command` (a shell string) or `argv`; with `env` and `cwd` at "
      "most {} KiB together (pass data on stdin, or write a script to the workspace). "
      "Non-interactive: stdin is "
      "empty unless given, there is no terminal, editors and pagers return at once "
      "(GIT_EDITOR=true, PAGER=cat, TERM=dumb). Returns the exit code, stdout and stderr (head "
      "and tail kept past max_output, with the bytes left out counted). A command still running "
      "after yield_after seconds keeps running as a job: use the job tool with the returned id "
      "to wait, read output, write stdin or kill it. Killed after `timeout` (at most {}). Use it "
      "to build, test, run git and scripts; use the file tools to read and edit files.",
      sandbox.policy_name, sandbox.workspace(), brig::sandbox::network_text(sandbox.policy),
      exec::kMaxCommandBytes / 1024, wall_time_text(sandbox.policy));
}

// Kills the job unless the call handed it over: a cancelled call, a client
// that went away or a server shutting down must not leave its jail running.
struct KillUnlessHanded {
  std::shared_ptr<exec::Job> job;
  bool handed = false;
  ~KillUnlessHanded() {
    if (!handed) job->abandon();
  }
};

asio::awaitable<ToolResult> run_exec(Principals* principals, exec::JobTable* jobs, Json args,
                                     ToolContext& ctx) {
  auto parsed = exec::parse_exec_args(args);
  if (!parsed) co_return ToolResult::error(parsed.error().to_string());
  auto principal = principals->of(ctx.principal());
  if (!principal) co_return ToolResult::error(principal.error().to_string());
  // Its output would only wait in memory behind a client that does not read
  // its answers: no jail for it until there is room.
  co_await ctx.room_for_reply();
  // Held until the call returns: it counts against the connection's calls in
  // flight whether its command becomes a job or not. Checked and counted with
  // no co_await between, as launch_job's slot is: a pipelined burst is
  // counted call by call.
  auto place = jobs->enter_call(ctx.connection());
  if (!place) co_return ToolResult::error(place.error().to_string());
  auto launched =
      co_await exec::launch_job(principal->sandbox, *jobs, *parsed, exec::owner_of(ctx.peer()));
  if (!launched) co_return ToolResult::error(launched.error().to_string());
  KillUnlessHanded guard{*launched};
  exec::Job& job = *guard.job;
  co_await exec::follow(job, ctx, job.started() + parsed->yield_after);
  exec::JobReport report = exec::report_job(job, parsed->max_output);
  if (const auto& o = job.outcome(); job.finished() && o &&
                                     o->kind == jail::Outcome::Kind::setup_failed &&
                                     o->setup.sys_errno == EACCES) {
    // A program (or a directory on its way) closed to the client's own user.
    if (std::string hint = identity_refusal(principal->sandbox); !hint.empty())
      report.result.add_text(hint);
  }
  if (report.keep_job) {
    // No co_await since report_job: the job is counted as it was reported.
    // Refused, the guard kills it: a job nobody may hold must not run on.
    if (auto kept = jobs->hand_over(job); !kept)
      co_return ToolResult::error(kept.error().to_string());
  }
  guard.handed = true;
  if (!report.keep_job) jobs->remove(job.id());
  co_return std::move(report.result);
}

}  // namespace

Tool exec_tool(Principals& principals, exec::JobTable& jobs) {
  const sandbox::Sandbox& sandbox = principals.own();
  return Tool{protocol::ToolDescriptor{
                  .name = std::string(policy::names::kExec),
                  .title = "Run a command",
                  .description = description(sandbox),
                  .input_schema = input_schema(sandbox.policy),
                  .output_schema = exec::job_report_schema(),
                  .annotations = protocol::tool_annotations(
                      /*read_only=*/false, /*destructive=*/true, /*idempotent=*/false,
                      /*open_world=*/sandbox.policy.network.mode != policy::NetworkMode::none),
              },
              [principals = &principals, jobs = &jobs](Json args, ToolContext& ctx) {
                return run_exec(principals, jobs, std::move(args), ctx);
              }};
}

}  // namespace brig::tools
