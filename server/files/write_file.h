// write_file: create or replace a file atomically.
#pragma once

#include <string_view>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "server/files/op.h"

namespace brig::files {

// The argument the server adds to a write_file or edit_file request (never
// the client: the tools' schemas refuse unknown arguments): the temporary
// file's random part, which the server records before the write
// (WriteOptions::temp_suffix).
inline constexpr std::string_view kTempSuffixArg = "temp_suffix";

// Runs in the worker. args: path, content (the whole new text), create_parents
// (default false), temp_suffix. Writes through atomic_write
// (server/files/atomic_write.h): the file is replaced whole or not at all,
// keeps its mode, and a symlink as the last component is refused. The
// reply's header says path, bytes, created and mode; its bytes are empty.
Result<OpReply> write_file_op(const protocol::Json& args, const OpContext& ctx);

// Removes the temporary file a killed write of args "path" with args
// "temp_suffix" left (remove_temp: that exact name, nothing else); the
// server's, not a tool: it asks after a write's worker died mid-operation,
// and at start-up for the writes a killed server left. Replies {"path",
// "gone", "held"}.
Result<OpReply> sweep_temps_op(const protocol::Json& args, const OpContext& ctx);

}  // namespace brig::files
