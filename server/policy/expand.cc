#include "server/policy/expand.h"

#include <cctype>

#include <fmt/format.h>

#include "jail/base/path.h"

namespace brig::policy {
namespace {

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Expands `~` at position 0 of `text` when it is "~" or starts with "~/";
// appends the result to *out and returns how many characters were used.
std::expected<size_t, std::string> expand_tilde(std::string_view text, const Expansion& x,
                                                std::string* out) {
  if (text.empty() || text[0] != '~') return 0;
  if (text.size() == 1 || text[1] == '/' || text[1] == ':') {
    if (x.home.empty())
      return std::unexpected(
          "\"~\" needs a home directory, and none is known; "
          "write the absolute path");
    out->append(x.home);
    return 1;
  }
  return std::unexpected(fmt::format("\"{}\": ~user is not supported; write the absolute path",
                                     text.substr(0, text.find_first_of("/:"))));
}

std::expected<std::string, std::string> expand_impl(std::string_view text, const Expansion& x,
                                                    bool tilde_after_colon) {
  std::string out;
  size_t i = 0;
  auto tilde = [&]() -> std::expected<void, std::string> {
    auto used = expand_tilde(text.substr(i), x, &out);
    if (!used) return std::unexpected(used.error());
    i += *used;
    return {};
  };
  if (auto t = tilde(); !t) return std::unexpected(t.error());
  while (i < text.size()) {
    const char c = text[i];
    if (c == ':' && tilde_after_colon) {
      out += c;
      ++i;
      if (auto t = tilde(); !t) return std::unexpected(t.error());
      continue;
    }
    if (c != '$') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    std::string_view name;
    size_t end = 0;
    if (i + 1 < text.size() && text[i + 1] == '{') {
      end = text.find('}', i + 2);
      if (end == std::string_view::npos)
        return std::unexpected(fmt::format("\"{}\": \"${{\" without a closing \"}}\"", text));
      name = text.substr(i + 2, end - i - 2);
      ++end;
    } else {
      end = i + 1;
      while (end < text.size() && is_name_char(text[end])) ++end;
      name = text.substr(i + 1, end - i - 1);
    }
    if (name.empty() || !is_name_start(name[0]) ||
        name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
            std::string_view::npos) {
      return std::unexpected(fmt::format(
          "\"{}\": \"$\" must start a variable name ($NAME or ${{NAME}}); write \"$$\" for a "
          "literal \"$\"",
          text));
    }
    const auto it = x.env.find(name);
    if (it == x.env.end()) {
      return std::unexpected(
          fmt::format("environment variable {} is not set; set it, or write the value without ${}",
                      name, name));
    }
    out += it->second;
    i = end;
  }
  return out;
}

}  // namespace

std::expected<std::string, std::string> expand(std::string_view text, const Expansion& x) {
  return expand_impl(text, x, /*tilde_after_colon=*/false);
}

std::expected<std::string, std::string> expand_value(std::string_view text, const Expansion& x) {
  return expand_impl(text, x, /*tilde_after_colon=*/true);
}

std::expected<std::string, std::string> normalize_path(std::string_view path) {
  if (path.empty()) return std::unexpected("an empty path; write an absolute path like \"/usr\"");
  if (path[0] != '/') {
    return std::unexpected(fmt::format(
        "\"{}\" is relative; write an absolute path, or start it with \"~/\" or \"$VAR/\"", path));
  }
  if (path.find('\0') != std::string_view::npos) return std::unexpected("a path with a NUL byte");
  auto normal = normalize(path, DotDot::refuse);
  if (!normal) {
    return std::unexpected(fmt::format("\"{}\" contains \"..\"; write the path without it", path));
  }
  return *normal;
}

}  // namespace brig::policy
