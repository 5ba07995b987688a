#include "server/policy/key_reference.h"

#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "server/policy/keys.h"

namespace brig::policy {
namespace {

// CMake copies policies/README.md into the test's working directory.
std::string readme() {
  std::ifstream in("policies_README.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string start_marker(std::string_view section) {
  return section.empty() ? "<!-- key reference: top level -->\n"
                         : fmt::format("<!-- key reference: [{}] -->\n", section);
}
constexpr std::string_view kEndMarker = "<!-- end of key reference -->";

// The text between `section`'s markers, or nullopt if they are missing.
std::optional<std::string> readme_table(const std::string& text, std::string_view section) {
  const size_t start = text.find(start_marker(section));
  if (start == std::string::npos) return std::nullopt;
  const size_t from = start + start_marker(section).size();
  const size_t end = text.find(kEndMarker, from);
  if (end == std::string::npos) return std::nullopt;
  return text.substr(from, end - from);
}

// A failure prints the README's table as it should read: paste it between
// the section's markers.
TEST(KeyReference, ReadmeMatchesTheKeyTable) {
  const std::string text = readme();
  ASSERT_FALSE(text.empty()) << "policies_README.md is missing from the working directory";
  std::vector<std::string_view> sections = {""};
  for (std::string_view s : section_names()) sections.push_back(s);
  size_t markers = 0;
  for (size_t at = 0; (at = text.find("<!-- key reference: ", at)) != std::string::npos; ++at)
    ++markers;
  EXPECT_EQ(markers, sections.size()) << "a section of the README names no section of the table";
  for (std::string_view s : sections) {
    auto table = readme_table(text, s);
    if (!table) {
      ADD_FAILURE() << "policies/README.md lacks a table; add\n"
                    << start_marker(s) << key_reference(s) << kEndMarker;
      continue;
    }
    EXPECT_EQ(*table, key_reference(s)) << "policies/README.md after " << start_marker(s);
  }
}

TEST(KeyReference, ListsShowTheirAddForm) {
  EXPECT_NE(key_reference("require").find("| `layers`, `layers_add` | "), std::string::npos);
}

TEST(KeyReference, BuiltInIsWhatPolicyShowWritesForTheDefaults) {
  const std::string table = key_reference("filesystem");
  EXPECT_NE(table.find("| `tmp_size` | size | `0` |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `private_home` | bool | `true` |"), std::string::npos) << table;
  EXPECT_NE(key_reference("environment").find("| table of strings | `{}` |"), std::string::npos);
  EXPECT_NE(key_reference("").find("| `extends` | string | — |"), std::string::npos);
}

}  // namespace
}  // namespace brig::policy
