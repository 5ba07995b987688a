// write_file: create or replace a file atomically.
#pragma once

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "server/files/op.h"

namespace brig::files {

// Runs in the worker. args: path, content (the whole new text), create_parents
// (default false). Writes through atomic_write (server/files/atomic_write.h):
// the file is replaced whole or not at all, keeps its mode, and a symlink as
// the last component is refused. The reply's header says path, bytes,
// created and mode; its bytes are empty.
Result<OpReply> write_file_op(const protocol::Json& args, const OpContext& ctx);

// Removes the temporary files killed writes of args "path" left beside it
// (sweep_temps_beside); the server's, not a tool: it asks after a write's
// worker died mid-operation. Replies {"path"}.
Result<OpReply> sweep_temps_op(const protocol::Json& args, const OpContext& ctx);

}  // namespace brig::files
