#include "server/policy/toml_text.h"

#include <fmt/format.h>

#include "server/policy/units.h"

namespace brig::policy {

std::string toml_string(std::string_view text, bool escape_dollar) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '$':
        out += escape_dollar ? "$$" : "$";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string bool_text(bool b) {
  return b ? "true" : "false";
}

std::string path_rules_text(const std::vector<PathRule>& rules) {
  if (rules.empty()) return "[]";
  std::string out = "[\n";
  for (const PathRule& r : rules) {
    const std::string path = toml_string(r.path, /*escape_dollar=*/true);
    out += r.optional ? fmt::format("  {{ path = {}, optional = true }},\n", path)
                      : fmt::format("  {},\n", path);
  }
  return out + "]";
}

std::string paths_text(const std::vector<std::string>& paths) {
  if (paths.empty()) return "[]";
  std::string out = "[\n";
  for (const std::string& p : paths) out += fmt::format("  {},\n", toml_string(p, true));
  return out + "]";
}

std::string names_text(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += toml_string(names[i], /*escape_dollar=*/false);
  }
  return out + "]";
}

std::string tmpfs_size_text(uint64_t bytes) {
  return bytes == 0 ? "0  # the kernel default: half of RAM"
                    : toml_string(format_size(bytes), false);
}

std::string size_limit_text(const std::optional<uint64_t>& bytes) {
  return bytes ? toml_string(format_size(*bytes), false) : "\"unlimited\"";
}

std::string count_limit_text(const std::optional<uint64_t>& n) {
  return n ? std::to_string(*n) : "\"unlimited\"";
}

std::string duration_limit_text(const std::optional<std::chrono::milliseconds>& d) {
  return d ? toml_string(format_duration(*d), false) : "\"unlimited\"";
}

}  // namespace brig::policy
