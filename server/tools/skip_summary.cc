#include "server/tools/skip_summary.h"

#include <fmt/format.h>

namespace brig::tools {

using protocol::Json;

Json skipped_schema() {
  const auto count = [](std::string_view d) {
    return Json{{"type", "integer"}, {"description", d}};
  };
  return {{"type", "object"},
          {"properties",
           {{"ignored", count("Entries ignored by .gitignore, .ignore or .git/info/exclude "
                              "(a directory counts once).")},
            {"hidden", count("Entries whose names start with '.' (a directory counts once).")},
            {"symlinks", count("Symlinks, which are not followed.")},
            {"binary", count("Binary files.")},
            {"too_large", count("Files over the size limit.")},
            {"unreadable", count("Files or directories that could not be read.")},
            {"filtered", count("Entries left out by include/exclude globs.")},
            {"unreadable_examples",
             {{"type", "array"},
              {"items", {{"type", "string"}}},
              {"description", "A few of the unreadable paths with the reason."}}}}},
          {"required", {"ignored", "hidden", "binary", "unreadable"}}};
}

std::string describe_skipped(const Json& s) {
  std::vector<std::string> parts;
  const auto add = [&](const char* key, std::string_view what) {
    const auto n = s.value(key, std::size_t{0});
    if (n > 0) parts.push_back(fmt::format("{} {}", n, what));
  };
  add("ignored", "ignored by .gitignore/.ignore (gitignore: false includes them)");
  add("hidden", "hidden (hidden: true includes them)");
  add("binary", "binary");
  add("too_large", "too large");
  add("symlinks", "symlinks (not followed; search their targets' paths)");
  add("filtered", "left out by include/exclude");
  add("unreadable", "unreadable");
  if (parts.empty()) return "Nothing was skipped.";
  std::string out = "Skipped: ";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  out += '.';
  if (auto it = s.find("unreadable_examples"); it != s.end() && it->is_array()) {
    for (const Json& e : *it)
      if (e.is_string()) out += fmt::format(" [{}]", e.get<std::string>());
  }
  return out;
}

}  // namespace brig::tools
