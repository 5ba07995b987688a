// A unified diff of two texts, line by line (Myers' O(ND) algorithm), as
// `diff -u` prints it: "---"/"+++" labels, "@@" hunks with context lines,
// and "\ No newline at end of file" where a last line lacks one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace brig::files {

struct DiffStats {
  std::size_t added = 0;    // lines only in the new text
  std::size_t removed = 0;  // lines only in the old text
};

struct Diff {
  std::string text;  // empty when the texts are equal
  DiffStats stats;
};

// The diff from old_text to new_text with `context` unchanged lines around
// each change. Past a few thousand differing lines the changed middle is
// shown as one block removed and re-added instead of a minimal script, which
// bounds time and memory.
Diff unified_diff(std::string_view old_text, std::string_view new_text, std::string_view old_label,
                  std::string_view new_label, std::size_t context = 3);

}  // namespace brig::files
