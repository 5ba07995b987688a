// Token counts in a provider's response, for the audit log: read from the
// bytes as they stream past (JSON bodies and SSE events alike), never
// buffering the body. Anthropic reports input_tokens and output_tokens
// (output_tokens again, cumulative, in message_delta), OpenAI
// prompt_tokens and completion_tokens, Gemini promptTokenCount and
// candidatesTokenCount; the largest value seen of each counts, which is
// the final one for cumulative streams.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace brig::llm {

struct Usage {
  std::optional<std::uint64_t> input_tokens;
  std::optional<std::uint64_t> output_tokens;
};

class UsageScanner {
 public:
  // The next bytes of the response (head or body); any split is fine.
  void feed(std::string_view bytes);
  Usage usage() const { return usage_; }

 private:
  void scan(std::string_view text);
  std::string tail_;  // the end of what was fed, for a field split across calls
  Usage usage_;
};

}  // namespace brig::llm
