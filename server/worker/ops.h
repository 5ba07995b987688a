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
OpFunction find_op(std::string_view op);

}  // namespace brig::worker
