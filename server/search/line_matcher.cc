#include "server/search/line_matcher.h"

#include <cstring>

#include <fmt/format.h>

#include "server/search/required_literal.h"

namespace brig::search {
namespace {

constexpr std::string_view kPatternOp = "search pattern";
// RE2's default of 8 MiB makes large patterns fall back from the DFA to the
// much slower NFA; this bounds memory per pattern all the same.
constexpr int64_t kRe2MaxMemory = 64 << 20;

// Bytes a case-insensitive byte scan may fold with ASCII rules alone. RE2's
// (?i) also lets 'k' match U+212A (KELVIN SIGN) and 's' match U+017F (LONG
// S), whose bytes differ, so those letters (and any non-ASCII byte) cannot
// be looked for as bytes. A test checks this list against the linked RE2.
bool fold_safe(unsigned char c) {
  if (c >= 0x80) return false;
  const unsigned char l = c | 0x20;
  return l != 'k' && l != 's';
}

// The longest stretches of `run` made of fold-safe bytes.
std::vector<std::string> fold_safe_parts(std::string_view run) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : run) {
    if (fold_safe(static_cast<unsigned char>(c))) {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// The run to scan for: longest first, then the one with the rarer bytes.
std::string best_run(const std::vector<std::string>& runs) {
  std::string best;
  unsigned best_rarity = 0;
  for (const std::string& r : runs) {
    unsigned rarity = 0;
    for (char c : r) rarity += 256 - byte_rank(static_cast<unsigned char>(c));
    if (r.size() > best.size() || (r.size() == best.size() && rarity > best_rarity)) {
      best = r;
      best_rarity = rarity;
    }
  }
  return best;
}

// The letters of a leading "(?imsU)" group, or nullopt when the pattern
// does not start with one (a '-' turning flags off, or a scoped "(?i:...)",
// is not read).
std::optional<std::string_view> leading_flags(std::string_view pattern) {
  if (!pattern.starts_with("(?")) return std::nullopt;
  const std::size_t close = pattern.find(')');
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view flags = pattern.substr(2, close - 2);
  if (flags.empty() || flags.find_first_not_of("imsU") != std::string_view::npos)
    return std::nullopt;
  return flags;
}

// Shorter runs find so many candidates that running RE2 on each of their
// lines costs more than letting RE2's DFA scan the buffer.
constexpr std::size_t kMinPrefilterRun = 2;

}  // namespace

Result<std::unique_ptr<LineMatcher>> LineMatcher::compile(std::string_view pattern,
                                                          PatternOptions options) {
  if (pattern.empty()) {
    return std::unexpected(Error{std::string(kPatternOp), "",
                                 "the pattern is empty (it would match every line; use "
                                 "read_file to read a file)",
                                 0});
  }
  if (options.fixed_strings && pattern.find('\n') != std::string_view::npos) {
    return std::unexpected(Error{std::string(kPatternOp), std::string(pattern),
                                 "the pattern holds a newline, but matches never span lines; "
                                 "search for one line of it",
                                 0});
  }
  std::unique_ptr<LineMatcher> m(new LineMatcher());
  const bool upper =
      options.fixed_strings
          ? std::any_of(pattern.begin(), pattern.end(), [](char c) { return c >= 'A' && c <= 'Z'; })
          : has_upper_case_literal(pattern);
  m->case_insensitive_ = options.case_insensitive || (options.smart_case && !upper);

  RE2::Options o;
  o.set_log_errors(false);
  o.set_never_nl(true);
  o.set_max_mem(kRe2MaxMemory);
  o.set_case_sensitive(!m->case_insensitive_);
  o.set_literal(options.fixed_strings);
  const re2::StringPiece as_given(pattern.data(), pattern.size());
  if (options.fixed_strings) {
    m->re_ = std::make_unique<RE2>(as_given, o);
  } else {
    // Compiled once as given so that an error quotes the user's pattern,
    // then with (?m) so that ^ and $ match at every line.
    RE2 check(as_given, o);
    if (!check.ok()) {
      return std::unexpected(Error{std::string(kPatternOp), std::string(pattern),
                                   fmt::format("invalid regular expression: {} (RE2 syntax; "
                                               "pass fixed_strings: true to search for the text "
                                               "as is)",
                                               check.error()),
                                   0});
    }
    m->re_ = std::make_unique<RE2>("(?m)" + std::string(pattern), o);
  }
  if (!m->re_->ok()) {
    return std::unexpected(
        Error{std::string(kPatternOp), std::string(pattern), m->re_->error(), 0});
  }

  // A leading flag group such as (?i) applies to the whole pattern: read
  // the literals after it, folding when it holds 'i'.
  std::string_view body = pattern;
  bool fold = m->case_insensitive_;
  if (!options.fixed_strings) {
    if (const auto flags = leading_flags(pattern)) {
      body.remove_prefix(flags->size() + 3);
      fold = fold || flags->find('i') != std::string_view::npos;
    }
  }
  std::optional<std::string> literal =
      options.fixed_strings ? std::optional<std::string>(pattern) : literal_of(body);
  if (literal && literal->empty()) literal.reset();
  if (literal && !fold) {
    m->finder_.emplace(*literal, /*ascii_fold=*/false);
    m->finder_is_exact_ = true;
    return m;
  }
  if (literal && std::all_of(literal->begin(), literal->end(),
                             [](char c) { return fold_safe(static_cast<unsigned char>(c)); })) {
    m->finder_.emplace(*literal, /*ascii_fold=*/true);
    m->finder_is_exact_ = true;
    return m;
  }
  std::vector<std::string> runs =
      literal ? std::vector<std::string>{*literal} : required_runs(body);
  if (fold) {
    std::vector<std::string> parts;
    for (const std::string& r : runs)
      for (std::string& p : fold_safe_parts(r)) parts.push_back(std::move(p));
    runs = std::move(parts);
  }
  std::string run = best_run(runs);
  if (run.size() >= kMinPrefilterRun) m->finder_.emplace(std::move(run), fold);
  return m;
}

std::string_view LineMatcher::strategy() const {
  if (!finder_) return "regex";
  if (finder_is_exact_) return finder_->ascii_fold() ? "literal+fold" : "literal";
  return "regex+prefilter";
}

std::optional<Span> LineMatcher::regex_in_line(std::string_view buffer, std::size_t line_start,
                                               std::size_t line_end) const {
  re2::StringPiece m;
  const re2::StringPiece text(buffer.data(), buffer.size());
  if (!re_->Match(text, line_start, line_end, RE2::UNANCHORED, &m, 1)) return std::nullopt;
  const auto start = static_cast<std::size_t>(m.data() - buffer.data());
  return Span{start, start + m.size()};
}

std::optional<Span> LineMatcher::find(std::string_view buffer, std::size_t from) const {
  const std::size_t size = buffer.size();
  // After a final newline there is no line left to match in.
  const auto past_end = [&](std::size_t at) {
    return at > size || (at == size && (size == 0 || buffer[size - 1] == '\n'));
  };
  if (past_end(from)) return std::nullopt;
  if (!finder_) {
    auto m = regex_in_line(buffer, from, size);
    if (!m || past_end(m->start)) return std::nullopt;
    return m;
  }
  std::size_t pos = from;
  while (true) {
    const std::size_t hit = finder_->find(buffer, pos);
    if (hit == std::string_view::npos) return std::nullopt;
    if (finder_is_exact_) return Span{hit, hit + finder_->needle().size()};
    const void* nl_before = hit > pos ? ::memrchr(buffer.data() + pos, '\n', hit - pos) : nullptr;
    const std::size_t line_start =
        nl_before
            ? static_cast<std::size_t>(static_cast<const char*>(nl_before) - buffer.data()) + 1
            : pos;
    const void* nl_after = std::memchr(buffer.data() + hit, '\n', size - hit);
    const std::size_t line_end =
        nl_after ? static_cast<std::size_t>(static_cast<const char*>(nl_after) - buffer.data())
                 : size;
    if (auto m = regex_in_line(buffer, line_start, line_end)) return m;
    if (line_end >= size) return std::nullopt;
    pos = line_end + 1;
  }
}

std::optional<Span> LineMatcher::find_in_line(std::string_view buffer, std::size_t line_start,
                                              std::size_t line_end) const {
  if (finder_ && finder_is_exact_) {
    const std::size_t hit = finder_->find(buffer.substr(0, line_end), line_start);
    if (hit == std::string_view::npos) return std::nullopt;
    return Span{hit, hit + finder_->needle().size()};
  }
  return regex_in_line(buffer, line_start, line_end);
}

}  // namespace brig::search
