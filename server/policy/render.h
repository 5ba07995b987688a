// A resolved Policy as TOML, for `brig policy show`: every key written out,
// in the order policies/README.md documents them, so the text loads back to
// the same Policy.
#pragma once

#include <string>
#include <vector>

#include "server/policy/policy.h"

namespace brig::policy {

// `chain` (LoadedPolicy::chain) is named in a leading comment; may be empty.
std::string render_policy(const Policy& policy, const std::vector<std::string>& chain);

// `text` as a TOML basic string, quotes included; "$" doubled when
// `escape_dollar` so that loading expands it back to "$".
std::string toml_string(std::string_view text, bool escape_dollar);

}  // namespace brig::policy
