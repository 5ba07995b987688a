// The file tools (read_file, write_file, edit_file, list_directory): each a
// descriptor from server/files/ plus a handler that runs the operation in
// a jailed worker and formats its reply. A failure becomes an isError result
// that says what failed and, when the policy refused the path, which rule
// refused it and how a policy could allow it.
#pragma once

#include <chrono>
#include <cstddef>

#include "jail/base/error.h"
#include "server/tools/registry.h"
#include "server/tools/sandbox.h"
#include "server/worker/worker_pool.h"

namespace brig::server {

struct FileToolLimits {
  std::chrono::milliseconds timeout{30000};  // per operation
  std::size_t max_bytes = 4u << 20;          // an operation's reply bytes, once encoded
};

// Registers the file tools the sandbox's policy does not disable, in the
// catalogue's fixed order. sandbox and pool must outlive the registry's use.
Result<void> register_file_tools(Registry& registry, const Sandbox& sandbox, WorkerPool& pool,
                                 FileToolLimits limits = {});

}  // namespace brig::server
