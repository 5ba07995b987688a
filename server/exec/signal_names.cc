#include "server/exec/signal_names.h"

#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace brig::exec {

std::optional<int> parse_signal(std::string_view text) {
  int number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) {
    if (number >= 1 && number < NSIG) return number;
    return std::nullopt;
  }
  std::string name(text);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (name.starts_with("SIG")) name.erase(0, 3);
  if (name.empty()) return std::nullopt;
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) return sig;
  }
  return std::nullopt;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  if (abbrev == nullptr) return fmt::format("signal {}", sig);
  return fmt::format("SIG{}", abbrev);
}

}  // namespace brig::exec
