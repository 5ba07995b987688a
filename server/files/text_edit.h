// Exact-text replacements on a file's bytes, all or nothing, keeping the
// file's CRLF line endings and UTF-8 byte order mark. Pure: no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "jail/base/error.h"

namespace brig::files {

// One replacement. old_text must occur exactly once in the text as the
// earlier edits left it, or at least once with replace_all (then every
// non-overlapping occurrence is replaced).
struct TextEdit {
  std::string old_text;
  std::string new_text;
  bool replace_all = false;
};

struct EditedText {
  std::string old_text;  // the file's text as compared: no BOM, "\n" line endings
  std::string new_text;  // the same after the edits
  std::string bytes;     // what to write: new_text with the file's BOM and line endings
  bool crlf = false;     // every line ending was "\r\n" (and is again)
  bool bom = false;      // the file started with a UTF-8 byte order mark (and still does)
  std::vector<std::size_t> replacements;  // per edit, how many occurrences it replaced
};

// Applies `edits` in order to `file`. A file whose line endings are all
// "\r\n" is edited with "\n" endings (edits may use either) and written back
// with "\r\n"; a file with mixed endings is matched byte for byte. Fails
// naming the first edit that matched 0 times, or more than once without
// replace_all, or has an empty old_text; nothing is applied then. `path`
// goes into the error's where.
Result<EditedText> apply_edits(std::string_view file, const std::vector<TextEdit>& edits,
                               const std::string& path);

}  // namespace brig::files
