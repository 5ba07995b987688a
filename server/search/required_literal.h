// What a regular expression's matches must contain, read off its text: the
// literal that lets a search skip most of a file with a byte scan before
// the regex engine runs. Conservative by design: when the pattern's shape
// is not plainly understood, it answers "nothing required".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace brig::search {

// The runs of bytes that every match of `pattern` (RE2 syntax, already
// known to compile) must contain, case-sensitively, as given in the
// pattern. Only the top-level sequence is read: a top-level '|', a flag
// group such as (?i), an octal escape or \Q...\E give no runs; groups,
// classes, '.', anchors and escapes like \w end a run; an item made
// optional by '*', '?' or {0,n} is dropped, and one repeated by '+' or
// {n,m} ends its run. Example: `\w+_SUSPEND\b` gives {"_SUSPEND"}.
std::vector<std::string> required_runs(std::string_view pattern);

// The bytes `pattern` stands for when it holds no regex syntax at all
// ("PM_RESUME", "a\.b" -> "a.b"); empty when it does.
std::optional<std::string> literal_of(std::string_view pattern);

// Whether the pattern contains an upper-case ASCII letter outside escapes
// (\S, \W and \p{Lu} do not count): smart case then searches it
// case-sensitively.
bool has_upper_case_literal(std::string_view pattern);

}  // namespace brig::search
