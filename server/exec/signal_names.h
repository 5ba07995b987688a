// Signal names as a model writes them ("TERM", "SIGTERM", "sigterm", "15")
// and as results show them ("SIGTERM").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace brig::exec {

// The signal number `text` names; empty for anything that is not a signal.
std::optional<int> parse_signal(std::string_view text);

// "SIGTERM"; "signal 40" for one without a name.
std::string signal_name(int sig);

}  // namespace brig::exec
