#include "server/files/text_edit.h"

#include <algorithm>

#include <fmt/format.h>

#include "server/files/utf8.h"

namespace brig::files {
namespace {

// Matches listed by line number in an ambiguity error; the rest are counted.
constexpr std::size_t kListedMatches = 5;

std::string replace_all_of(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text, pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  out.append(text, pos);
  return out;
}

// Every line ending is "\r\n": at least one, and no '\n' without its '\r'.
bool all_crlf(std::string_view text) {
  bool any = false;
  for (std::size_t pos = text.find('\n'); pos != std::string_view::npos;
       pos = text.find('\n', pos + 1)) {
    if (pos == 0 || text[pos - 1] != '\r') return false;
    any = true;
  }
  return any;
}

std::vector<std::size_t> find_all(std::string_view text, std::string_view needle) {
  std::vector<std::size_t> hits;
  for (std::size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size()))
    hits.push_back(pos);
  return hits;
}

std::size_t line_of(std::string_view text, std::size_t offset) {
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

// Each line with its leading and trailing blanks removed; line breaks stay,
// so offsets map to the same line numbers.
std::string trim_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    const bool last = end == std::string_view::npos;
    if (last) end = text.size();
    std::string_view line = text.substr(start, end - start);
    const std::size_t first = line.find_first_not_of(" \t\r");
    line = first == std::string_view::npos
               ? std::string_view()
               : line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    out += line;
    if (last) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

// Why old_text found nothing, when a near miss explains it.
std::string no_match_reason(std::string_view original, std::string_view text,
                            std::string_view old_text, bool after_earlier_edit) {
  if (after_earlier_edit && original.find(old_text) != std::string_view::npos) {
    return "old_text matches 0 times: it matched the file, but an earlier edit changed that "
           "text; combine the two edits or quote the edited text";
  }
  const std::string loose_needle = trim_lines(old_text);
  if (!loose_needle.empty()) {
    const std::string loose_text = trim_lines(text);
    const std::size_t hit = loose_text.find(loose_needle);
    if (hit != std::string::npos) {
      return fmt::format(
          "old_text matches 0 times, but matches at line {} if indentation and trailing blanks "
          "are ignored; copy the exact whitespace from the file",
          line_of(loose_text, hit));
    }
  }
  return "old_text matches 0 times; it must match the file exactly, including whitespace and "
         "indentation: read the file again and copy the text";
}

}  // namespace

Result<EditedText> apply_edits(std::string_view file, const std::vector<TextEdit>& edits,
                               const std::string& path) {
  EditedText out;
  out.bom = file.starts_with(kUtf8Bom);
  if (out.bom) file.remove_prefix(kUtf8Bom.size());
  out.crlf = all_crlf(file);
  out.old_text = out.crlf ? replace_all_of(file, "\r\n", "\n") : std::string(file);

  const auto fail = [&](std::size_t index, std::string why) {
    return std::unexpected(
        Error{"edit file", path, fmt::format("edits[{}]: {}; no edit was applied", index, why), 0});
  };
  std::string text = out.old_text;
  for (std::size_t i = 0; i < edits.size(); ++i) {
    const TextEdit& e = edits[i];
    const std::string old_text = out.crlf ? replace_all_of(e.old_text, "\r\n", "\n") : e.old_text;
    const std::string new_text = out.crlf ? replace_all_of(e.new_text, "\r\n", "\n") : e.new_text;
    if (old_text.empty()) {
      return fail(i,
                  "old_text is empty; quote the text to replace (to write a whole file, use "
                  "write_file)");
    }
    const std::vector<std::size_t> hits = find_all(text, old_text);
    if (hits.empty()) return fail(i, no_match_reason(out.old_text, text, old_text, i > 0));
    if (hits.size() > 1 && !e.replace_all) {
      std::string lines;
      for (std::size_t k = 0; k < hits.size() && k < kListedMatches; ++k) {
        lines += fmt::format("{}{}", k == 0 ? "" : ", ", line_of(text, hits[k]));
      }
      if (hits.size() > kListedMatches) lines += ", ...";
      return fail(i,
                  fmt::format("old_text matches {} times (at lines {}); include more surrounding "
                              "lines to make it unique, or set replace_all: true",
                              hits.size(), lines));
    }
    text = replace_all_of(text, old_text, new_text);
    out.replacements.push_back(hits.size());
  }
  out.new_text = std::move(text);
  out.bytes = std::string(out.bom ? kUtf8Bom : "");
  out.bytes += out.crlf ? replace_all_of(out.new_text, "\n", "\r\n") : out.new_text;
  return out;
}

}  // namespace brig::files
