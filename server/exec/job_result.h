// The result of `exec` and of `job wait`: how the job stands (exit code,
// signal, timeout, still running) and the output the caller has not seen
// yet, head and tail within max_output per stream. A job that failed (non-zero
// exit, signal, timeout, could not start) is isError: the model must see why.
#pragma once

#include <cstddef>

#include "protocol/mcp_types.h"
#include "server/exec/job.h"

namespace brig::exec {

struct JobReport {
  protocol::ToolResult result;
  // Whether the caller still needs the job in the table: it runs, or output
  // was left out that `job read` can fetch.
  bool keep_job = false;
};

// The report on job, showing each stream from Job::delivered() on, which
// then advances to the stream's end.
JobReport report_job(Job& job, std::size_t max_output);

// The structuredContent schema of report_job().
protocol::Json job_report_schema();

// "exited 0", "running", ...: the status field.
std::string job_status(const Job& job);

}  // namespace brig::exec
