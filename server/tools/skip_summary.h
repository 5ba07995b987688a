// How find_files and search tell what they left out: the schema of the
// "skipped" counts and the sentence a model reads.
#pragma once

#include <string>

#include "protocol/json_rpc.h"

namespace brig::tools {

// The output schema of SkipCounts::to_json().
protocol::Json skipped_schema();

// "Skipped: 4 ignored by .gitignore/.ignore (gitignore: false includes
// them), 2 hidden (hidden: true includes them)." or "Nothing was skipped."
std::string describe_skipped(const protocol::Json& skipped);

}  // namespace brig::tools
