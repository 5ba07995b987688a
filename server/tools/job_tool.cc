// The `job` tool: what a model can do with a command that outlived its exec
// call (or whose output was cut): list, read output by offset, wait, write
// stdin, signal, kill. A caller sees only the jobs of its own uid.
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "protocol/text.h"
#include "server/exec/exec_args.h"
#include "server/exec/follow.h"
#include "server/exec/job_result.h"
#include "server/exec/signal_names.h"
#include "server/exec/utf8_repair.h"
#include "server/policy/tool_names.h"
#include "server/policy/units.h"
#include "server/tools/exec_tools.h"

namespace brig::tools {
namespace {

using protocol::Json;
using protocol::ToolResult;

constexpr std::size_t kDefaultReadLimit = 64 * 1024;
constexpr protocol::IntegerArg kReadOffset{"offset", 0, protocol::kMaxJsonInteger, 0};
constexpr protocol::IntegerArg kReadLimit{"limit", 1, exec::kMaxMaxOutput, kDefaultReadLimit};
constexpr double kDefaultWaitSeconds = 20;
constexpr double kMaxWaitSeconds = 300;
// How long `kill` waits for the jail to be gone before it reports.
constexpr std::chrono::seconds kKillWait{10};

Json input_schema() {
  return Json{
      {"type", "object"},
      {"properties",
       {
           {"action",
            {{"type", "string"},
             {"enum", {"list", "read", "wait", "write", "signal", "kill"}},
             {"description",
              "list: your jobs. read: output from an offset. wait: until it ends or `seconds` "
              "pass, then its status and new output. write: text to its stdin. signal: send a "
              "signal. kill: end it and its whole sandbox."}}},
           {"id",
            {{"type", "string"}, {"description", "The job id exec returned (all but list)."}}},
           {"stream",
            {{"type", "string"},
             {"enum", {"stdout", "stderr"}},
             {"description", "read: which output (default stdout)."}}},
           {"offset", kReadOffset.schema("read: the byte offset to start at (default 0).")},
           {"limit", kReadLimit.schema(fmt::format("read: at most this many bytes (default {}).",
                                                   kDefaultReadLimit))},
           {"seconds",
            {{"type", "number"},
             {"minimum", 0},
             {"maximum", kMaxWaitSeconds},
             {"description",
              fmt::format("wait: the longest to wait (default {}).", kDefaultWaitSeconds)}}},
           {"max_output", exec::kMaxOutputArg.schema(
                              fmt::format("wait, kill: bytes of each stream to show (default {}).",
                                          exec::kDefaultMaxOutput))},
           {"input", {{"type", "string"}, {"description", "write: the text to send."}}},
           {"eof", {{"type", "boolean"}, {"description", "write: close stdin afterwards."}}},
           {"signal",
            {{"type", "string"},
             {"description", "signal: a name or number, e.g. \"INT\", \"SIGTERM\", \"15\"."}}},
       }},
      {"required", {"action"}},
      {"additionalProperties", false},
  };
}

// One schema for every action's structuredContent: the report of wait and
// kill (exec's), plus the fields of list, read, write and signal.
Json output_schema() {
  Json s = exec::job_report_schema();
  s["required"] = Json::array();
  Json& p = s["properties"];
  const Json integer = {{"type", "integer"}};
  p["jobs"] = {{"type", "array"},
               {"items",
                {{"type", "object"},
                 {"properties",
                  {{"id", {{"type", "string"}}},
                   {"command", {{"type", "string"}}},
                   {"status", {{"type", "string"}}},
                   {"exit_code", integer},
                   {"signal", {{"type", "string"}}},
                   {"duration_ms", integer},
                   {"stdout_bytes", integer},
                   {"stderr_bytes", integer},
                   {"stdin_open", {{"type", "boolean"}}}}},
                 {"required", {"id", "command", "status", "duration_ms"}}}}};
  p["stream"] = {{"type", "string"}};
  p["offset"] = integer;
  p["next_offset"] = integer;
  p["size"] = integer;
  p["eof"] = {{"type", "boolean"}};
  p["queued"] = integer;
  p["pending"] = integer;
  p["sent"] = {{"type", "string"}};
  return s;
}

ToolResult no_job(std::string_view id) {
  return ToolResult::error(fmt::format(
      "no job \"{}\" of yours: it never existed, belongs to another user, or finished more than "
      "its retention ago; action \"list\" shows your jobs",
      id));
}

ToolResult list_jobs(exec::JobTable& jobs, uid_t owner) {
  Json list = Json::array();
  std::string text;
  for (const auto& job : jobs.list(owner)) {
    Json j = {{"id", job->id()},
              {"command", job->command()},
              {"status", exec::job_status(*job)},
              {"duration_ms", job->duration().count()},
              {"stdout_bytes", job->spool(exec::Stream::out).size()},
              {"stderr_bytes", job->spool(exec::Stream::err).size()},
              {"stdin_open", job->has_stdin()}};
    std::string how = j["status"].get<std::string>();
    if (const auto& o = job->outcome(); job->finished() && o) {
      if (o->kind == jail::Outcome::Kind::exited) {
        j["exit_code"] = o->exit_code;
        how = fmt::format("exit code {}", o->exit_code);
      } else if (o->kind == jail::Outcome::Kind::signaled) {
        j["signal"] = exec::signal_name(o->signal);
        how = "killed by " + exec::signal_name(o->signal);
      }
    }
    text += fmt::format("{}  {}  {:.1f} s  {}\n", job->id(), how,
                        static_cast<double>(job->duration().count()) / 1000.0,
                        protocol::clip(job->command(), 200));
    list.push_back(std::move(j));
  }
  ToolResult r = ToolResult::text(text.empty() ? "no jobs" : text);
  r.structured = Json{{"jobs", std::move(list)}};
  return r;
}

ToolResult read_job(exec::Job& job, const Json& args) {
  const std::string stream = args.value("stream", std::string("stdout"));
  const exec::Stream s = stream == "stderr" ? exec::Stream::err : exec::Stream::out;
  const auto offset_arg = kReadOffset.read(args);
  if (!offset_arg) return ToolResult::error(offset_arg.error().to_string());
  const auto limit_arg = kReadLimit.read(args);
  if (!limit_arg) return ToolResult::error(limit_arg.error().to_string());
  const auto offset = static_cast<std::uint64_t>(*offset_arg);
  const auto limit = static_cast<std::size_t>(*limit_arg);
  const exec::Spool& spool = job.spool(s);
  auto bytes = spool.read(offset, limit);
  if (!bytes) return ToolResult::error(bytes.error().to_string());
  // A page ends on a character boundary unless it ends the stream for good.
  const bool stream_done = job.finished() && offset + bytes->size() == spool.size();
  if (!stream_done) bytes->resize(exec::complete_prefix_length(*bytes));
  const std::uint64_t next = offset + bytes->size();
  const bool eof = job.finished() && next >= spool.size();
  std::string data = exec::repair_utf8(*bytes);
  std::string where;
  if (offset >= spool.size()) {
    where = eof ? fmt::format("{} of {} ends at {} bytes", stream, job.id(), spool.size())
                : fmt::format("no {} past offset {} yet; {} is still running (action \"wait\")",
                              stream, offset, job.id());
  } else {
    where = fmt::format("{} of {}: bytes {} to {} of {}{}", stream, job.id(), offset, next,
                        spool.size(), eof ? ", the end" : fmt::format("; next offset {}", next));
  }
  // The bytes travel once, as the first text block; structuredContent says
  // where they are in the stream.
  ToolResult r = ToolResult::text(std::move(data));
  r.add_text(where);
  r.structured = Json{{"job", job.id()},     {"status", exec::job_status(job)},
                      {"stream", stream},    {"offset", offset},
                      {"next_offset", next}, {"size", spool.size()},
                      {"eof", eof}};
  return r;
}

ToolResult write_job(exec::Job& job, const Json& args) {
  auto w = job.write_stdin(args.value("input", std::string()), args.value("eof", false));
  if (!w) return ToolResult::error(w.error().to_string());
  ToolResult r = ToolResult::text(fmt::format(
      "queued {} bytes for the stdin of {}; {} bytes not yet read by it{}", w->queued, job.id(),
      w->pending, args.value("eof", false) ? "; stdin closes after them" : ""));
  r.structured = Json{{"job", job.id()},
                      {"status", exec::job_status(job)},
                      {"queued", w->queued},
                      {"pending", w->pending}};
  return r;
}

ToolResult signal_job(exec::Job& job, const Json& args) {
  const std::string text = args.value("signal", std::string());
  const auto sig = exec::parse_signal(text);
  if (!sig) {
    return ToolResult::error(
        fmt::format("\"{}\" is not a signal; give a name (TERM, INT, HUP, KILL, ...) or a number",
                    protocol::clip(text, 50)));
  }
  if (const int err = job.signal(*sig); err != 0) {
    return ToolResult::error(
        err == ESRCH ? fmt::format("{} has already finished", job.id())
                     : fmt::format("could not signal {}: {}", job.id(), std::strerror(err)));
  }
  ToolResult r = ToolResult::text(fmt::format("sent {} to {}", exec::signal_name(*sig), job.id()));
  r.structured =
      Json{{"job", job.id()}, {"status", exec::job_status(job)}, {"sent", exec::signal_name(*sig)}};
  return r;
}

asio::awaitable<ToolResult> run_job(exec::JobTable* jobs, Json args, ToolContext& ctx) {
  const std::string action = args.at("action").get<std::string>();
  const uid_t owner = exec::owner_of(ctx.peer());
  if (action == "list") co_return list_jobs(*jobs, owner);
  if (!args.contains("id")) {
    co_return ToolResult::error(fmt::format("action \"{}\" needs the job's id", action));
  }
  const std::string id = args.at("id").get<std::string>();
  // Held for the whole call: the table may drop the job meanwhile.
  std::shared_ptr<exec::Job> job = jobs->find(owner, id);
  if (!job) co_return no_job(protocol::clip(id, 100));
  if (action == "write") co_return write_job(*job, args);
  if (action == "signal") co_return signal_job(*job, args);
  // read, wait and kill answer with output (up to 2 x kMaxMaxOutput bytes):
  // as exec's, such a reply is made only once the connection's output has
  // room, so a client that does not read its answers cannot pile them up in
  // memory (docs/server.md, "Limits and a slow reader"). The output is taken
  // after the wait: it is as current as the reply can be.
  if (action == "read") {
    co_await ctx.room_for_reply();
    co_return read_job(*job, args);
  }
  const auto max_output = exec::kMaxOutputArg.read(args);
  if (!max_output) co_return ToolResult::error(max_output.error().to_string());
  if (action == "wait") {
    const double seconds = args.value("seconds", kDefaultWaitSeconds);
    co_await exec::follow(
        *job, ctx,
        exec::Job::Clock::now() + std::chrono::duration_cast<exec::Job::Clock::duration>(
                                      std::chrono::duration<double>(seconds)));
  } else {  // kill: at once, whatever the client reads; only the report waits
    job->kill();
    co_await exec::follow(*job, ctx, exec::Job::Clock::now() + kKillWait);
  }
  co_await ctx.room_for_reply();
  co_return exec::report_job(*job, static_cast<std::size_t>(*max_output)).result;
}

}  // namespace

Tool job_tool(exec::JobTable& jobs) {
  return Tool{
      protocol::ToolDescriptor{
          .name = std::string(policy::names::kJob),
          .title = "Follow a running command",
          .description = fmt::format(
              "Work with commands exec left running as jobs (after yield_after) or whose output "
              "it cut: list them, read their stdout/stderr by byte offset (paged by limit), wait "
              "for one to end (bounded by seconds), write to its stdin (if exec had "
              "stdin_open), send a signal, or kill it with its whole sandbox. You see only your "
              "own jobs; a finished job is kept for {}.",
              policy::format_duration(jobs.limits().retention)),
          .input_schema = input_schema(),
          .output_schema = output_schema(),
          .annotations = protocol::tool_annotations(/*read_only=*/false, /*destructive=*/true,
                                                    /*idempotent=*/false,
                                                    /*open_world=*/false),
      },
      [jobs = &jobs](Json args, ToolContext& ctx) { return run_job(jobs, std::move(args), ctx); }};
}

}  // namespace brig::tools
