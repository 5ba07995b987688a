// The file and search tools (read_file, write_file, edit_file,
// list_directory, find_files, search): each a descriptor and a reply
// (server/tools/*_tool.h) plus a handler that runs the operation
// (server/files/, server/search/) in a jailed worker. A failure becomes an isError result
// that says what failed and, when the policy refused the path, which rule
// refused it and how a policy could allow it. Each call runs in the workers
// of its principal (server/tools/principals.h), as that user.
#pragma once

#include <chrono>
#include <cstddef>

#include "jail/base/error.h"
#include "server/tools/principals.h"
#include "server/tools/registry.h"

namespace brig::tools {

struct FileToolLimits {
  std::chrono::milliseconds timeout{30000};  // per operation
  std::size_t max_bytes = 4u << 20;          // an operation's reply bytes, once encoded
};

// Registers the file tools the policy of brig's own sandbox does not
// disable, in the catalogue's fixed order. principals must outlive the
// registry's use.
Result<void> register_file_tools(Registry& registry, Principals& principals,
                                 FileToolLimits limits = {});

}  // namespace brig::tools
