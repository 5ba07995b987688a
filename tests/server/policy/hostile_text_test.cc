// Policy text that once crashed whoever loaded it (docs/fuzzing.md): each
// must give an error or a policy, never undefined behaviour or a blown stack.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/policy/key_depth.h"
#include "server/policy/loader.h"
#include "tests/server/policy/policy_test_util.h"

namespace brig::policy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::messages;

class HostileText : public testing::PolicyText {};

std::string dotted(std::size_t parts) {
  std::string key = "a";
  for (std::size_t i = 1; i < parts; ++i) key += ".a";
  return key;
}

// The fuzzer's crash: a letter from U+00A1..U+049A where toml++ 3.3.0 looks
// for whitespace reached __builtin_unreachable() in its whitespace table
// (server/static_libs/toml.h); the fuzz build jumped to address 0.
TEST_F(HostileText, NonAsciiLetterAfterAKeyIsASyntaxError) {
  auto r = load("l\xC7\xAA");  // "lǪ"
  EXPECT_THAT(messages(r), ElementsAre(HasSubstr("TOML syntax: Error while parsing key-value "
                                                 "pair: expected '=', saw 'Ǫ'")));
  EXPECT_THAT(messages(load("[filesystem] \xC3\xA9")), ElementsAre(HasSubstr("TOML syntax")));
}

// Upstream's report of the same bug (marzer/tomlplusplus#190): a line-ending
// backslash in a multi-line string trims the whitespace after it, asking
// the same table about "§" — valid TOML, which must load.
TEST_F(HostileText, LetterAfterALineEndingBackslashLoads) {
  auto r = load("description = \"\"\"\\\n  \xC2\xA7 and \xC3\xA9\"\"\"\n");
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  EXPECT_EQ(r->policy.description, "\xC2\xA7 and \xC3\xA9");
}

// toml++ nests a table per part of a dotted key, without a limit, and walks
// the nesting recursively: a 2 MB key overflowed the stack. Refused before
// parsing, at the dot that goes one part too far.
TEST_F(HostileText, DeepDottedKeyIsRefusedWhereItGoesTooDeep) {
  auto r = load("\n" + dotted(1'000'000) + " = 1\n");
  EXPECT_THAT(messages(r),
              ElementsAre("test.toml:2:64: a dotted key or table name of more than 32 parts; "
                          "brig's keys have at most three (a TOML parser nests a table per "
                          "part, and brig refuses a nesting deep enough to exhaust its stack)"));
  EXPECT_THAT(messages(load("[" + dotted(40) + "]\n")), ElementsAre(HasSubstr("more than 32")));
  EXPECT_THAT(messages(load("[[" + dotted(40) + "]]\n")), ElementsAre(HasSubstr("more than 32")));
  EXPECT_THAT(messages(load("x = { " + dotted(40) + " = 1 }\n")),
              ElementsAre(HasSubstr("more than 32")));
}

// 32 parts is still a key (brig does not know it, but that is another error).
TEST_F(HostileText, ThirtyTwoPartsIsStillAKey) {
  EXPECT_THAT(messages(load(dotted(kMaxKeyParts) + " = 1\n")),
              ElementsAre(HasSubstr("unknown key \"a\" at the top level")));
  EXPECT_THAT(messages(load("a . \"b.c.d\" . 'e.f' = 1\n")),
              ElementsAre(HasSubstr("unknown key \"a\"")));
}

// Dots in strings and comments, and values of a few dots each, are no key.
TEST_F(HostileText, DotsOutsideKeysCountForNothing) {
  const std::string dots(200, '.');
  auto r = load("description = \"" + dots + "\" # " + dots + "\n");
  ASSERT_TRUE(r) << ::testing::PrintToString(messages(r));
  EXPECT_EQ(r->policy.description, dots);
  EXPECT_FALSE(find_overlong_key("k = ['" + dots + "', \"\"\"x\n" + dots + "\"\"\", '''\n" + dots +
                                 "''', 1.5, 2.5, 1979-05-27T07:32:00.999]\n"));
}

// The deepest nesting the two limits still let through: 256 levels of inline
// tables (toml++'s own limit is on those), each entered by a key of 32 parts,
// about 8 000 tables deep. It must load (to an error about the unknown key)
// with the stack to spare, in the sanitizer build too.
TEST_F(HostileText, DeepestNestingTheLimitsAllowLoads) {
  std::string text = "x = ";
  const int levels = 250;
  for (int i = 0; i < levels; ++i) text += "{ " + dotted(kMaxKeyParts) + " = ";
  text += "1";
  text += std::string(levels, '}');
  EXPECT_THAT(messages(load(text + "\n")), ElementsAre(HasSubstr("unknown key \"x\"")));
}

TEST(FindOverlongKey, CountsPartsOfOneKeyOnly) {
  EXPECT_FALSE(find_overlong_key("a.b.c = 1\nd.e.f = 2\n", 3));
  auto at = find_overlong_key("a.b.c = 1\nd.e.f.g = 2\n", 3);
  ASSERT_TRUE(at);
  EXPECT_EQ(at->line, 2u);
  EXPECT_EQ(at->column, 6u);
  // An escaped quote does not end a string; a newline ends a single-line one.
  EXPECT_FALSE(find_overlong_key("k = \"\\\".a.b.c.d\"\n", 3));
  EXPECT_TRUE(find_overlong_key("k = 'x\na.b.c.d = 1\n", 3));
}

}  // namespace
}  // namespace brig::policy
