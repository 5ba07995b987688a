#include "server/exec/job_result.h"

#include <fmt/format.h>

#include "server/exec/excerpt.h"
#include "server/exec/job_table.h"
#include "server/exec/signal_names.h"

namespace brig::exec {
namespace {

using protocol::Json;

std::string seconds_text(std::chrono::milliseconds d) {
  return fmt::format("{:.2f} s", static_cast<double>(d.count()) / 1000.0);
}

std::string status_line(const Job& job) {
  const std::string took = seconds_text(job.duration());
  if (!job.finished()) {
    return fmt::format(
        "still running after {} as job {}: use the job tool with this id to wait for it, read "
        "its output, write to its stdin or kill it",
        took, job.id());
  }
  const jail::Outcome& o = *job.outcome();
  switch (o.kind) {
    case jail::Outcome::Kind::exited:
      return fmt::format("exit code {} ({})", o.exit_code, took);
    case jail::Outcome::Kind::signaled:
      return fmt::format("killed by {}{} ({})", signal_name(o.signal),
                         job.kill_requested() ? " on request" : "", took);
    case jail::Outcome::Kind::timed_out:
      return fmt::format("timed out after {}; the whole jail was killed", took);
    case jail::Outcome::Kind::setup_failed:
      break;
  }
  return fmt::format("could not run: {} (exit status {})", o.to_string(), o.exit_status());
}

}  // namespace

std::string job_status(const Job& job) {
  if (!job.finished()) return "running";
  switch (job.outcome()->kind) {
    case jail::Outcome::Kind::exited:
      return "exited";
    case jail::Outcome::Kind::signaled:
      return "signaled";
    case jail::Outcome::Kind::timed_out:
      return "timed_out";
    case jail::Outcome::Kind::setup_failed:
      break;
  }
  return "failed_to_start";
}

JobReport report_job(Job& job, std::size_t max_output) {
  JobReport report;
  Json s = Json::object();
  s["status"] = job_status(job);
  const bool finished = job.finished();
  bool failed = false;
  if (finished) {
    const jail::Outcome& o = *job.outcome();
    failed = !(o.kind == jail::Outcome::Kind::exited && o.exit_code == 0);
    if (o.kind == jail::Outcome::Kind::exited) s["exit_code"] = o.exit_code;
    if (o.kind == jail::Outcome::Kind::setup_failed) {
      s["exit_code"] = o.exit_status();
      s["error"] = o.to_string();
    }
    if (o.kind == jail::Outcome::Kind::signaled) s["signal"] = signal_name(o.signal);
  }
  s["timed_out"] = finished && job.outcome()->kind == jail::Outcome::Kind::timed_out;
  s["duration_ms"] = job.duration().count();

  std::string text = status_line(job);
  bool dropped_any = false;
  for (Stream st : {Stream::out, Stream::err}) {
    const std::string name = stream_name(st);
    const Excerpt e = excerpt(job.spool(st), job.delivered(st), max_output);
    job.set_delivered(st, e.end);
    const std::string shown = e.text(fmt::format(
        "the job tool reads them: action \"read\", id \"{}\", stream \"{}\"", job.id(), name));
    // The stream's text is in the text block only: a reply carries output
    // once (docs/tools.md, "One copy").
    s[name + "_dropped"] = e.dropped;
    s[name + "_bytes"] = e.end;
    dropped_any = dropped_any || e.dropped > 0;
    if (!shown.empty()) {
      text += fmt::format("\n--- {} ---\n{}", name, shown);
      if (shown.back() != '\n') text += '\n';
    }
  }
  std::string spool_error = job.spool_error();
  for (Stream st : {Stream::out, Stream::err}) {
    const Spool& spool = job.spool(st);
    if (!spool.cut_by_budget() && !spool.evicted()) continue;
    if (!spool_error.empty()) spool_error += "; ";
    spool_error += fmt::format(
        "{} {}: the server keeps at most {} bytes of output of all jobs (brig serve {})",
        stream_name(st), spool.evicted() ? "was dropped" : "was cut short",
        spool.limits().budget ? spool.limits().budget->limit() : 0, kSpoolBytesOption);
  }
  if (!spool_error.empty()) {
    s["spool_error"] = spool_error;
    text += fmt::format("\nbrig could not keep all output: {}\n", spool_error);
  }
  if (finished && !job.outcome()->warning.empty()) {
    s["warning"] = job.outcome()->warning;
    text += fmt::format("\nbrig: {}\n", job.outcome()->warning);
  }
  report.keep_job = !finished || dropped_any;
  if (report.keep_job) s["job"] = job.id();
  report.result = failed ? protocol::ToolResult::error(std::move(text))
                         : protocol::ToolResult::text(std::move(text));
  report.result.structured = std::move(s);
  return report;
}

Json job_report_schema() {
  const Json integer = {{"type", "integer"}};
  const Json string = {{"type", "string"}};
  return Json{
      {"type", "object"},
      {"description",
       "How the command ended; its output is in the result's text block (\"--- stdout ---\", "
       "\"--- stderr ---\"), not repeated here."},
      {"properties",
       {
           {"job",
            {{"type", "string"},
             {"description", "the job's id for the job tool, while it runs or has unread output"}}},
           {"status",
            {{"type", "string"},
             {"enum", {"running", "exited", "signaled", "timed_out", "failed_to_start"}}}},
           {"exit_code", integer},
           {"signal", {{"type", "string"}, {"description", "the signal that ended it: SIGKILL"}}},
           {"timed_out", {{"type", "boolean"}}},
           {"error", {{"type", "string"}, {"description", "why it could not start"}}},
           {"duration_ms", integer},
           {"stdout_dropped",
            {{"type", "integer"}, {"description", "bytes left out between head and tail"}}},
           {"stderr_dropped", integer},
           {"stdout_bytes", {{"type", "integer"}, {"description", "bytes written so far"}}},
           {"stderr_bytes", integer},
           {"spool_error", string},
           {"warning",
            {{"type", "string"},
             {"description",
              "something the command's caller should know that is not a failure: git's state "
              "not written back to the workspace's .git"}}},
       }},
      {"required",
       {"status", "timed_out", "duration_ms", "stdout_dropped", "stderr_dropped", "stdout_bytes",
        "stderr_bytes"}},
  };
}

}  // namespace brig::exec
