// A resolved Policy as TOML, for `brig policy show`: every key of the key
// table (keys.h) written out in its order, so the text loads back to the
// same Policy.
#pragma once

#include <string>
#include <vector>

#include "server/policy/policy.h"
#include "server/policy/toml_text.h"

namespace brig::policy {

// `chain` (LoadedPolicy::chain) is named in a leading comment; may be empty.
std::string render_policy(const Policy& policy, const std::vector<std::string>& chain);

}  // namespace brig::policy
