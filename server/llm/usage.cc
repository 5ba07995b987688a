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

// The bytes are looked at in place: a stream of gigabytes passes here, so
// each chunk is searched for two short needles (every field name ends in
// one of them), and only the seam with the previous chunk is copied.
void UsageScanner::feed(std::string_view bytes) {
  if (bytes.empty()) return;
  if (!tail_.empty()) {
    std::string seam = tail_;
    seam.append(bytes.substr(0, std::min(bytes.size(), kKeep)));
    scan(seam);
  }
  scan(bytes);
  if (bytes.size() >= kKeep) {
    tail_.assign(bytes.substr(bytes.size() - kKeep));
  } else {
    tail_.append(bytes);
    if (tail_.size() > kKeep) tail_.erase(0, tail_.size() - kKeep);
  }
}

// Seeing a number twice (in the seam and in its chunk) changes nothing: a
// maximum is kept.
void UsageScanner::scan(std::string_view text) {
  for (std::string_view needle : {std::string_view("okens\""), std::string_view("TokenCount\"")}) {
    for (std::size_t at = text.find(needle); at != std::string_view::npos;
         at = text.find(needle, at + 1)) {
      const std::size_t end = at + needle.size();
      const Field* field = nullptr;
      for (const Field& f : kFields) {
        if (end >= f.quoted.size() &&
            text.substr(end - f.quoted.size(), f.quoted.size()) == f.quoted)
          field = &f;
      }
      if (field == nullptr) continue;
      std::size_t i = end;
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
      // next bytes: the seam scans it again, whole.
      if (digits == text.size()) continue;
      auto& slot = field->input ? usage_.input_tokens : usage_.output_tokens;
      slot = std::max(slot.value_or(0), value);
    }
  }
}

}  // namespace brig::llm
