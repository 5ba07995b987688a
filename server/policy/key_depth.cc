#include "server/policy/key_depth.h"

namespace brig::policy {
namespace {

// A character of a bare key, or blank space between the parts of a key
// (TOML allows `a . b`): the key goes on.
bool continues_key(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == ' ' || c == '\t';
}

class Scanner {
 public:
  Scanner(std::string_view text, std::size_t max_parts) : text_(text), max_parts_(max_parts) {}

  std::optional<TextPos> run() {
    while (i_ < text_.size()) {
      const char c = text_[i_];
      if (c == '"' || c == '\'') {
        skip_string(c);  // a quoted part of a key, or a value: the key goes on
      } else if (c == '#') {
        while (i_ < text_.size() && text_[i_] != '\n') ++i_;
        dots_ = 0;
      } else if (c == '.') {
        if (++dots_ >= max_parts_) return here();
        ++i_;
      } else {
        if (!continues_key(c)) dots_ = 0;
        step();
      }
    }
    return std::nullopt;
  }

 private:
  TextPos here() const { return TextPos{line_, static_cast<std::uint32_t>(i_ - line_start_ + 1)}; }

  bool three(char quote) const {
    return i_ + 2 < text_.size() && text_[i_] == quote && text_[i_ + 1] == quote &&
           text_[i_ + 2] == quote;
  }

  // One character, counting lines.
  void step() {
    if (text_[i_] == '\n') {
      ++line_;
      line_start_ = i_ + 1;
    }
    ++i_;
  }

  // From an opening quote past the closing one. Basic strings ("...") have
  // backslash escapes, literal ones ('...') none; a single-line string ends
  // at the end of its line at the latest (toml++ refuses it there anyway),
  // a multi-line one ("""...""") may span lines.
  void skip_string(char quote) {
    const bool multi = three(quote);
    i_ += multi ? 3 : 1;
    while (i_ < text_.size()) {
      const char c = text_[i_];
      if (c == '\\' && quote == '"' && i_ + 1 < text_.size()) {
        ++i_;  // the escaped character may be a quote or a newline
        step();
        continue;
      }
      if (c == quote && (!multi || three(quote))) {
        i_ += multi ? 3 : 1;
        return;
      }
      if (c == '\n' && !multi) return;
      step();
    }
  }

  std::string_view text_;
  std::size_t max_parts_;
  std::size_t i_ = 0;
  std::size_t line_start_ = 0;
  std::uint32_t line_ = 1;
  std::size_t dots_ = 0;  // dots in the key being read
};

}  // namespace

std::optional<TextPos> find_overlong_key(std::string_view text, std::size_t max_parts) {
  return Scanner(text, max_parts).run();
}

}  // namespace brig::policy
