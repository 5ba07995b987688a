#include "server/search/page_cursor.h"

#include <charconv>
#include <optional>

#include <fmt/format.h>

namespace brig::search {
namespace {

constexpr std::string_view kPrefix = "c1.";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::uint64_t query_hash(std::string_view op, const std::string& root, const protocol::Json& args) {
  protocol::Json shaping = args;
  for (const char* k : {"cursor", "offset", "limit", "max_results", "max_line_length"})
    shaping.erase(k);
  // FNV-1a: the hash only tells queries apart, it guards nothing.
  std::uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](std::string_view s) {
    for (const char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
    h ^= 0xff;  // a separator no text byte sequence can fake
    h *= 1099511628211ull;
  };
  mix(op);
  mix(root);
  // nlohmann's objects are ordered maps: the same arguments dump the same.
  mix(shaping.dump(-1, ' ', false, protocol::Json::error_handler_t::replace));
  return h;
}

std::string encode_cursor(const PageCursor& cursor) {
  std::string out = fmt::format(
      "{}{:016x}.{}.", kPrefix, cursor.query,
      cursor.skip == PageCursor::kWholeFile ? std::string("all") : std::to_string(cursor.skip));
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char c : cursor.path) {
    out += kHex[static_cast<unsigned char>(c) >> 4];
    out += kHex[static_cast<unsigned char>(c) & 15];
  }
  return out;
}

Result<std::optional<PageCursor>> read_cursor(const protocol::Json& args, std::string_view what,
                                              std::uint64_t query) {
  const auto it = args.find("cursor");
  if (it == args.end() || it->is_null()) return std::nullopt;
  const auto bad = [&](std::string why) {
    return std::unexpected(Error{std::string(what), "cursor", std::move(why), EINVAL});
  };
  if (!it->is_string()) return bad("must be the next_cursor string of an earlier call");
  std::string_view s = it->get_ref<const std::string&>();
  const std::string_view kNotOurs =
      "is not a cursor this tool gave: pass next_cursor from the previous page unchanged, or "
      "start again without cursor";
  if (!s.starts_with(kPrefix)) return bad(std::string(kNotOurs));
  s.remove_prefix(kPrefix.size());
  PageCursor c;
  const auto dot = s.find('.');
  if (dot != 16) return bad(std::string(kNotOurs));
  if (std::from_chars(s.data(), s.data() + 16, c.query, 16).ptr != s.data() + 16)
    return bad(std::string(kNotOurs));
  s.remove_prefix(17);
  const auto dot2 = s.find('.');
  if (dot2 == std::string_view::npos) return bad(std::string(kNotOurs));
  const std::string_view skip = s.substr(0, dot2);
  if (skip == "all") {
    c.skip = PageCursor::kWholeFile;
  } else if (skip.empty() || std::from_chars(skip.data(), skip.data() + skip.size(), c.skip).ptr !=
                                 skip.data() + skip.size()) {
    return bad(std::string(kNotOurs));
  }
  s.remove_prefix(dot2 + 1);
  if (s.empty() || s.size() % 2 != 0) return bad(std::string(kNotOurs));
  for (std::size_t i = 0; i < s.size(); i += 2) {
    const int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);
    if (hi < 0 || lo < 0) return bad(std::string(kNotOurs));
    c.path += static_cast<char>(hi * 16 + lo);
  }
  if (c.query != query) {
    return bad(
        "belongs to another query (its pattern, path or options differ): cursors continue only "
        "the call that gave them; start again without cursor");
  }
  return c;
}

}  // namespace brig::search
