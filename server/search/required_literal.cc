#include "server/search/required_literal.h"

#include <cctype>

namespace brig::search {
namespace {

bool is_ascii_punct(unsigned char c) {
  return c < 0x80 && std::ispunct(c);
}

// Length of the UTF-8 sequence a lead byte starts (1 for ASCII and for
// stray bytes, which RE2 would have refused anyway).
std::size_t utf8_length(unsigned char c) {
  if (c >= 0xf0) return 4;
  if (c >= 0xe0) return 3;
  if (c >= 0xc0) return 2;
  return 1;
}

// Index just past the character class opening at i ("[...]").
std::size_t skip_class(std::string_view p, std::size_t i) {
  ++i;
  if (i < p.size() && p[i] == '^') ++i;
  if (i < p.size() && p[i] == ']') ++i;
  while (i < p.size() && p[i] != ']') {
    if (p[i] == '\\') {
      i += 2;
    } else if (p[i] == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      const std::size_t end = p.find(":]", i + 2);
      i = end == std::string_view::npos ? i + 1 : end + 2;
    } else {
      ++i;
    }
  }
  return i + 1;
}

// Index just past the group opening at i, or npos when it holds a top-level
// '|' of its own (which does not matter) — only nesting is tracked.
std::size_t skip_group(std::string_view p, std::size_t i) {
  int depth = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\') {
      i += 2;
      continue;
    }
    if (c == '[') {
      i = skip_class(p, i);
      continue;
    }
    if (c == '(') ++depth;
    if (c == ')' && --depth == 0) return i + 1;
    ++i;
  }
  return p.size();
}

enum class Repeat { once, optional, at_least_once };

// Reads the quantifier (if any) at i; advances i past it and a lazy '?'.
// Returns nullopt for a '{' that is not a repetition (then RE2 reads it as a
// literal brace, and the caller gives up rather than guess).
std::optional<Repeat> read_quantifier(std::string_view p, std::size_t& i) {
  if (i >= p.size()) return Repeat::once;
  Repeat r = Repeat::once;
  const char c = p[i];
  if (c == '*' || c == '?') {
    r = Repeat::optional;
    ++i;
  } else if (c == '+') {
    r = Repeat::at_least_once;
    ++i;
  } else if (c == '{') {
    std::size_t j = i + 1;
    std::size_t digits = 0;
    unsigned long min = 0;
    while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) {
      min = min * 10 + static_cast<unsigned long>(p[j] - '0');
      if (min > 100000) min = 100000;
      ++j;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    if (j < p.size() && p[j] == ',') {
      ++j;
      while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j]))) ++j;
    }
    if (j >= p.size() || p[j] != '}') return std::nullopt;
    i = j + 1;
    r = min == 0 ? Repeat::optional : Repeat::at_least_once;
  } else {
    return Repeat::once;
  }
  if (i < p.size() && p[i] == '?') ++i;  // lazy
  return r;
}

}  // namespace

std::vector<std::string> required_runs(std::string_view p) {
  std::vector<std::string> runs;
  std::string run;
  const auto end_run = [&] {
    if (!run.empty()) runs.push_back(std::move(run));
    run.clear();
  };
  std::size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    std::string literal;  // the item's bytes when it is one literal character
    if (c == '|' || c == '\n') return {};
    if (c == '(') {
      if (p.substr(i, 2) == "(?" && p.substr(i, 3) != "(?:" && p.substr(i, 4) != "(?P<") return {};
      i = skip_group(p, i);
    } else if (c == '[') {
      i = skip_class(p, i);
    } else if (c == '\\') {
      if (i + 1 >= p.size()) return {};
      const auto d = static_cast<unsigned char>(p[i + 1]);
      if (is_ascii_punct(d)) {
        literal.assign(1, static_cast<char>(d));
        i += 2;
      } else if (d == 'p' || d == 'P') {
        i += 2;
        if (i < p.size() && p[i] == '{') {
          const std::size_t close = p.find('}', i);
          i = close == std::string_view::npos ? p.size() : close + 1;
        } else {
          ++i;
        }
      } else if (std::isalpha(d) && d != 'Q' && d != 'x') {
        i += 2;  // \d \w \s \b \A \z \n \t ...: not one fixed byte
      } else {
        return {};  // \Q...\E, \x.., octal: not worth reading
      }
    } else if (c == '.' || c == '^' || c == '$') {
      ++i;
    } else if (c == '*' || c == '+' || c == '?' || c == '{' || c == ')') {
      return {};  // a quantifier with nothing before it: RE2 refused it
    } else {
      const std::size_t len = utf8_length(static_cast<unsigned char>(c));
      literal.assign(p.substr(i, len));
      i += len;
    }
    const auto repeat = read_quantifier(p, i);
    if (!repeat) return {};
    if (literal.empty()) {
      end_run();
    } else if (*repeat == Repeat::once) {
      run += literal;
    } else if (*repeat == Repeat::optional) {
      end_run();
    } else {
      run += literal;
      end_run();
    }
  }
  end_run();
  return runs;
}

std::optional<std::string> literal_of(std::string_view p) {
  std::string out;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size() || !is_ascii_punct(static_cast<unsigned char>(p[i + 1])))
        return std::nullopt;
      out += p[++i];
      continue;
    }
    if (std::string_view(".^$*+?()[]{}|").find(c) != std::string_view::npos) return std::nullopt;
    out += c;
  }
  return out;
}

bool has_upper_case_literal(std::string_view p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\') {
      // \S, \W, \B and \P are escapes, and a class name after \p is no text.
      const bool property = i + 1 < p.size() && (p[i + 1] == 'p' || p[i + 1] == 'P');
      if (property && i + 2 < p.size() && p[i + 2] == '{') {
        const std::size_t close = p.find('}', i);
        i = close == std::string_view::npos ? p.size() : close;
      } else {
        i += property ? 2 : 1;
      }
      continue;
    }
    if (p[i] >= 'A' && p[i] <= 'Z') return true;
  }
  return false;
}

}  // namespace brig::search
