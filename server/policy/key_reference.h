// The key reference of policies/README.md, one Markdown table a section,
// rendered from the key table (keys.h). key_reference_test.cc fails when the
// README's tables differ, and prints them as they should read.
#pragma once

#include <string>
#include <string_view>

namespace brig::policy {

// The table of `section`'s keys ("" for the top level), ending in a newline.
std::string key_reference(std::string_view section);

}  // namespace brig::policy
