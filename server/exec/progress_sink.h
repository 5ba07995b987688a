// ProgressSink: where follow() streams a job's output while a call waits for
// it. The tool call's context is one (server/tools/tool.h); exec only needs
// this much of it, so it does not depend on the tools built on top of it.
#pragma once

#include <optional>
#include <string>

namespace brig::exec {

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;

  // Reports progress; sent only when the client asked for progress on this
  // call (a progressToken) and progress exceeds the last value sent.
  virtual void progress(double progress, std::optional<double> total, std::string message) = 0;
};

}  // namespace brig::exec
