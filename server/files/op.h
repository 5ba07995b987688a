// One file operation as the worker runs it: the context every operation
// gets, and the reply it sends back to the server.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "protocol/json_rpc.h"

namespace brig::files {

// What an operation may use besides its arguments.
struct OpContext {
  std::string workspace;  // absolute; relative paths in arguments start here
  // When the operation must stop and report what it did so far (a search
  // says it was cut short); the server kills a worker that overruns it.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // The reply's bytes, once encoded for the client, stay under this.
  std::size_t max_bytes = 4u << 20;
};

// An operation's answer: a JSON header that says what was done (paths,
// counts, truncation) and raw bytes (file contents, a diff), which cross the
// worker boundary unescaped and are JSON-escaped once, for the client.
struct OpReply {
  protocol::Json header = protocol::Json::object();
  std::string bytes;
};

}  // namespace brig::files
