// follow(): what a tool call does while a job runs — wait for its end, at
// most until a deadline, and stream its new output to the client as
// progress notifications (the text in `message`, progress = bytes streamed),
// paced by a ProgressPacer.
#pragma once

#include <asio/awaitable.hpp>

#include "server/exec/job.h"
#include "server/exec/progress_pacer.h"
#include "server/exec/progress_sink.h"

namespace brig::exec {

// Returns when job has finished or at until. Streaming starts at the
// output the job's results have not shown yet (Job::delivered). Throws
// operation_aborted when the call is cancelled; the job is left as it is.
asio::awaitable<void> follow(Job& job, ProgressSink& sink, Job::Clock::time_point until,
                             ProgressPacer::Options pacing = {});

}  // namespace brig::exec
