// The byte scans and the line matcher, checked against RE2 run on each
// line by itself: whatever shortcut a pattern takes, the matching lines
// must be exactly RE2's.
#include "server/search/line_matcher.h"

#include <random>
#include <set>

#include <gtest/gtest.h>

#include "server/search/literal_finder.h"
#include "server/search/required_literal.h"

namespace brig::search {
namespace {

std::string utf8(unsigned c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xc0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 63));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xe0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 63));
    s += static_cast<char>(0x80 | (c & 63));
  } else {
    s += static_cast<char>(0xf0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 63));
    s += static_cast<char>(0x80 | ((c >> 6) & 63));
    s += static_cast<char>(0x80 | (c & 63));
  }
  return s;
}

// The case-insensitive byte scan treats every ASCII letter but k and s as
// folding only to its other ASCII case. This is what makes that true.
TEST(CaseFolding, OnlyKelvinAndLongSFoldIntoAsciiLetters) {
  const RE2 any_letter("(?i)[a-z]");
  std::vector<unsigned> found;
  for (unsigned c = 0x80; c < 0x20000; ++c) {
    if (c >= 0xd800 && c < 0xe000) continue;
    if (RE2::FullMatch(utf8(c), any_letter)) found.push_back(c);
  }
  EXPECT_EQ(found, (std::vector<unsigned>{0x17f, 0x212a}));
}

TEST(LiteralFinder, FindsEveryOccurrenceAtEveryAlignment) {
  std::mt19937 rng(7);
  for (const char* needle : {"PM_RESUME", "ab", "a", "zzzq", "x_y_z_x_y_z_x_y_z_0123456789"}) {
    for (bool fold : {false, true}) {
      const LiteralFinder f(needle, fold);
      for (int round = 0; round < 50; ++round) {
        std::string hay(rng() % 200, 'x');
        for (char& c : hay) c = "abxyzPMRESU_pmresu"[rng() % 18];
        if (rng() % 2) hay.insert(rng() % (hay.size() + 1), needle);
        std::size_t want = std::string::npos;
        for (std::size_t i = 0; i + std::strlen(needle) <= hay.size() && want == std::string::npos;
             ++i) {
          bool eq = true;
          for (std::size_t k = 0; needle[k] && eq; ++k) {
            const char a = hay[i + k], b = needle[k];
            eq = fold ? std::tolower(a) == std::tolower(b) : a == b;
          }
          if (eq) want = i;
        }
        EXPECT_EQ(f.find(hay, 0), want) << needle << " in " << hay;
      }
    }
  }
  EXPECT_EQ(LiteralFinder("abc", false).find("ab", 0), std::string::npos);
  EXPECT_EQ(LiteralFinder("abc", false).find("xxabcxxabc", 3), 7u);
}

TEST(RequiredLiteral, ReadsTheTopLevelSequence) {
  using Runs = std::vector<std::string>;
  EXPECT_EQ(required_runs("\\w+_SUSPEND\\b"), (Runs{"_SUSPEND"}));
  EXPECT_EQ(required_runs("foo.*bar"), (Runs{"foo", "bar"}));
  EXPECT_EQ(required_runs("abc?d"), (Runs{"ab", "d"}));
  EXPECT_EQ(required_runs("abc+d"), (Runs{"abc", "d"}));
  EXPECT_EQ(required_runs("ab{0,2}c"), (Runs{"a", "c"}));
  EXPECT_EQ(required_runs("ab{2}c"), (Runs{"ab", "c"}));
  EXPECT_EQ(required_runs("a\\.b(x|y)z[0-9]q"), (Runs{"a.b", "z", "q"}));
  EXPECT_EQ(required_runs("caf\xc3\xa9+s"), (Runs{"caf\xc3\xa9", "s"}));
  EXPECT_TRUE(required_runs("foo|bar").empty());
  EXPECT_TRUE(required_runs("(?i)foo").empty());
  EXPECT_TRUE(required_runs("\\Qa.b\\E").empty());
  EXPECT_TRUE(required_runs("\\101x").empty());
  EXPECT_EQ(literal_of("PM_RESUME"), "PM_RESUME");
  EXPECT_EQ(literal_of("a\\.b"), "a.b");
  EXPECT_EQ(literal_of("a.b"), std::nullopt);
  EXPECT_EQ(literal_of("\\d"), std::nullopt);
  EXPECT_TRUE(has_upper_case_literal("Foo"));
  EXPECT_FALSE(has_upper_case_literal("foo\\S+\\W\\p{Lu}\\pL"));
}

TEST(LineMatcher, PicksTheCheapestSafeStrategy) {
  const auto strategy = [](std::string_view p, PatternOptions o = {}) {
    auto m = LineMatcher::compile(p, o);
    return m ? std::string((*m)->strategy()) : m.error().to_string();
  };
  EXPECT_EQ(strategy("PM_RESUME"), "literal");
  EXPECT_EQ(strategy("pm_reume", {.case_insensitive = true}), "literal+fold");
  // 's' may match U+017F: the scan looks for "pm_re" and RE2 confirms.
  EXPECT_EQ(strategy("pm_resume", {.case_insensitive = true}), "regex+prefilter");
  EXPECT_EQ(strategy("\\w+_SUSPEND\\b"), "regex+prefilter");
  EXPECT_EQ(strategy("[a-z]+\\d"), "regex");
  EXPECT_EQ(strategy("(?i)pm_reume"), "literal+fold");
  EXPECT_EQ(strategy("(?i)\\w+_suspend"), "regex+prefilter");
  EXPECT_EQ(strategy("(?i:pm)_reume"), "regex");
  EXPECT_EQ(strategy("a.b", {.fixed_strings = true}), "literal");
}

TEST(LineMatcher, SmartCase) {
  EXPECT_TRUE((*LineMatcher::compile("foo", {.smart_case = true}))->case_insensitive());
  EXPECT_FALSE((*LineMatcher::compile("Foo", {.smart_case = true}))->case_insensitive());
  EXPECT_TRUE((*LineMatcher::compile("\\Sfoo", {.smart_case = true}))->case_insensitive());
  EXPECT_FALSE((*LineMatcher::compile("foo", {}))->case_insensitive());
}

TEST(LineMatcher, BadPatternsNameTheProblem) {
  auto bad = LineMatcher::compile("a(b", {});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().why.find("missing ): a(b"), std::string::npos) << bad.error().why;
  EXPECT_EQ(bad.error().why.find("(?m)"), std::string::npos);
  auto rep = LineMatcher::compile("x{2,1}", {});
  ASSERT_FALSE(rep);
  EXPECT_NE(rep.error().why.find("invalid repetition size"), std::string::npos);
  EXPECT_FALSE(LineMatcher::compile("", {}));
  EXPECT_FALSE(LineMatcher::compile("a\nb", {.fixed_strings = true}));
}

// Lines of `text` (split on '\n') in which RE2 alone finds a match.
std::set<std::size_t> reference_lines(std::string_view pattern, PatternOptions o,
                                      std::string_view text, bool ci) {
  RE2::Options ro;
  ro.set_log_errors(false);
  ro.set_never_nl(true);
  ro.set_case_sensitive(!ci);
  ro.set_literal(o.fixed_strings);
  const RE2 re(o.fixed_strings ? std::string(pattern) : "(?m)" + std::string(pattern), ro);
  std::set<std::size_t> out;
  std::size_t n = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t nl = text.find('\n', at);
    const std::string_view line =
        text.substr(at, nl == std::string_view::npos ? text.npos : nl - at);
    if (RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), re)) out.insert(n);
    ++n;
    at = nl == std::string_view::npos ? text.size() : nl + 1;
  }
  return out;
}

std::set<std::size_t> matcher_lines(const LineMatcher& m, std::string_view text) {
  std::set<std::size_t> out;
  std::size_t pos = 0;
  while (auto s = m.find(text, pos)) {
    EXPECT_LE(s->end, text.size());
    const std::size_t line_start = text.rfind('\n', s->start == 0 ? 0 : s->start - 1);
    const std::size_t ls =
        s->start == 0 || line_start == std::string_view::npos ? 0 : line_start + 1;
    EXPECT_EQ(text.substr(s->start, s->end - s->start).find('\n'), std::string_view::npos);
    out.insert(static_cast<std::size_t>(std::count(text.begin(), text.begin() + ls, '\n')));
    const std::size_t nl = text.find('\n', s->start);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return out;
}

TEST(LineMatcher, AgreesWithRe2LineByLine) {
  const std::vector<std::string> pieces = {
      "a",    "b",      "ab",   "K",       "k",        "s",           "S",     "_",        "x",
      "\\w",  "\\d",    ".",    "[ab]",    "(a|b)",    "(?:ab)+",     "a*",    "b+",       "c?",
      "x{2}", "x{0,2}", "^",    "$",       "\\b",      "\xc3\xa9",    "\\.",   "\xc5\xbf", "pm",
      "_RE",  "sUs",    "[^a]", "(?i)a",   "\\Qa.\\E", "[[:alpha:]]", "a{1,}", "\\x41",    "\\pL",
      "}",    "]",      "a+?",  "(?:k|s)", "\\S"};
  const std::vector<std::string> chars = {
      "a", "b",  "c",  "k", "K",        "s",        "S",        "_",
      "x", "X",  ".",  " ", "\xc3\xa9", "\xc3\x89", "\xc5\xbf", "\xe2\x84\xaa",
      "1", "\n", "\n", "p", "m",        "R",        "E",        "u",
      "U"};
  std::mt19937 rng(42);
  int compared = 0;
  for (int round = 0; round < 6000; ++round) {
    std::string pattern;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) pattern += pieces[rng() % pieces.size()];
    if (rng() % 10 == 0) pattern += "|" + pieces[rng() % pieces.size()];
    if (rng() % 8 == 0) pattern.insert(0, rng() % 2 ? "(?i)" : "(?sU)");
    PatternOptions o;
    o.case_insensitive = rng() % 2;
    o.fixed_strings = rng() % 6 == 0;
    auto m = LineMatcher::compile(pattern, o);
    if (!m) continue;
    std::string text;
    const int len = static_cast<int>(rng() % 120);
    for (int i = 0; i < len; ++i) text += chars[rng() % chars.size()];
    const auto want = reference_lines(pattern, o, text, (*m)->case_insensitive());
    const auto got = matcher_lines(**m, text);
    ASSERT_EQ(got, want) << "pattern " << pattern << " ci " << o.case_insensitive << " fixed "
                         << o.fixed_strings << " strategy " << (*m)->strategy() << "\ntext:\n"
                         << text;
    ++compared;
  }
  EXPECT_GT(compared, 4000);
}

}  // namespace
}  // namespace brig::search
