#include "server/policy/keys.h"

#include <algorithm>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace brig::policy {
namespace {

// `brig policy show` writes a section header where the section changes, and
// a table key as a [section.key] table that ends its section.
TEST(KeyTable, SectionsAreContiguousAndTablesEndThem) {
  std::set<std::string_view> done;
  std::string_view section;
  bool after_table = false;
  for (const Key& k : policy_keys()) {
    if (k.section != section) {
      EXPECT_FALSE(done.contains(k.section)) << "[" << k.section << "] is split";
      done.insert(section);
      section = k.section;
      after_table = false;
    }
    EXPECT_FALSE(after_table) << k.section << "." << k.name << " follows a table key";
    after_table = k.form == Form::table;
  }
}

// A name twice in a section (a key and another's _add form) would make one
// of them unreachable.
TEST(KeyTable, EveryNameIsOneKey) {
  std::vector<std::string_view> sections = {""};
  sections.insert(sections.end(), section_names().begin(), section_names().end());
  for (std::string_view section : sections) {
    std::set<std::string_view> seen;
    for (std::string_view name : key_names(section)) {
      EXPECT_TRUE(seen.insert(name).second) << section << ": " << name;
      const bool is_section =
          section.empty() && std::ranges::find(section_names(), name) != section_names().end();
      if (!is_section) {
        EXPECT_NE(find_key(section, name), nullptr) << section << ": " << name;
      }
    }
  }
}

TEST(KeyTable, EveryKeyButExtendsIsReadAndShown) {
  for (const Key& k : policy_keys()) {
    if (k.section.empty() && k.name == "extends") continue;
    EXPECT_NE(k.apply, nullptr) << k.section << "." << k.name;
    EXPECT_NE(k.show, nullptr) << k.section << "." << k.name;
    EXPECT_FALSE(k.type.empty() || k.doc.empty()) << k.section << "." << k.name;
  }
}

TEST(KeyTable, AddFormsAreOnlyForLists) {
  EXPECT_EQ(find_key("filesystem", "read_only_add"), find_key("filesystem", "read_only"));
  EXPECT_EQ(find_key("filesystem", "workspace_add"), nullptr);
  EXPECT_EQ(find_key("environment", "set_add"), nullptr);
  EXPECT_EQ(find_key("", "filesystem"), nullptr);  // a section, not a key
  EXPECT_EQ(key_names("nowhere").size(), 0u);
}

}  // namespace
}  // namespace brig::policy
