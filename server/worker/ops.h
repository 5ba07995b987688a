// The operations brig-worker serves, by the name requests use.
#pragma once

#include <string_view>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"
#include "server/files/op.h"

namespace brig::worker {

using OpFunction = Result<files::OpReply> (*)(const protocol::Json& args,
                                              const files::OpContext& ctx);

// The operation named `op` ("read_file", "write_file", "edit_file",
// "list_directory", "find_files", "search"); nullptr for any other name.
// Also kSweepTempsOp, which only the server sends.
OpFunction find_op(std::string_view op);

// files::sweep_temps_op: after a write's worker died mid-operation.
inline constexpr std::string_view kSweepTempsOp = "sweep_temps";

}  // namespace brig::worker
