#include "server/llm/usage.h"

#include <algorithm>
#include <cctype>

namespace brig::llm {
namespace {

struct Field {
  std::string_view quoted;  // the field name with its quotes
  bool input;
};
constexpr Field kFields[] = {
    {"\"input_tokens\"", true},       {"\"prompt_tokens\"", true},
    {"\"promptTokenCount\"", true},   {"\"output_tokens\"", false},
    {"\"completion_tokens\"", false}, {"\"candidatesTokenCount\"", false},
};
// Longer than every field name, ':', spaces and a 20-digit number.
constexpr std::size_t kKeep = 64;

}  // namespace

void UsageScanner::feed(std::string_view bytes) {
  if (bytes.empty()) return;
  std::string text = tail_;
  text.append(bytes);
  scan(text);
  tail_ = text.substr(text.size() - std::min(text.size(), kKeep));
}

// Seeing a number twice (once more from the tail) changes nothing: a
// maximum is kept.
void UsageScanner::scan(std::string_view text) {
  for (const Field& f : kFields) {
    for (std::size_t at = text.find(f.quoted); at != std::string_view::npos;
         at = text.find(f.quoted, at + 1)) {
      std::size_t i = at + f.quoted.size();
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
      if (i >= text.size() || text[i] != ':') continue;
      ++i;
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
      std::size_t digits = i;
      std::uint64_t value = 0;
      while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) &&
             digits - i < 19) {
        value = value * 10 + static_cast<std::uint64_t>(text[digits] - '0');
        ++digits;
      }
      if (digits == i) continue;
      // A number that runs to the end of what came so far may go on in the
      // next bytes: the tail scans it again, whole.
      if (digits == text.size()) continue;
      auto& slot = f.input ? usage_.input_tokens : usage_.output_tokens;
      slot = std::max(slot.value_or(0), value);
    }
  }
}

}  // namespace brig::llm
