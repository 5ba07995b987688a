#include "protocol/request_scan.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>

#include "protocol/string_stops.h"

namespace brig::protocol {

namespace {

// A strict JSON reader that builds the same values nlohmann's DOM parser
// builds, or gives up. Every "false" means "not mine": the general path reads
// the line again and decides whether it is an error.
class Scanner {
 public:
  Scanner(std::string_view text, std::size_t max_depth)
      : p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth) {}

  void skip_space() {
    // JSON's four whitespace characters, as nlohmann skips them.
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool consume(char c) {
    skip_space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool next_is(char c) {
    skip_space();
    return p_ != end_ && *p_ == c;
  }
  bool at_end() {
    skip_space();
    return p_ == end_;
  }
  // Counts one more level of nesting, as nesting_depth() would.
  bool enter() { return ++depth_ <= max_depth_; }
  void leave() { --depth_; }

  bool value(Json& out);
  // At the opening quote.
  bool string(std::string& out);
  bool number(Json& out);
  // At the opening brace of a tools/call's params: "name" and "arguments"
  // into call, every other member into rest (left null if there is none).
  bool tool_call_params(ToolCallParams& call, Json& rest);

 private:
  // At an opening brace: reads the members up to the closing one, each key
  // handed to on_member, which reads its value.
  template <class OnMember>
  bool members(OnMember&& on_member);
  // Reads a member's value into object[key].
  bool member_into(Json::object_t& object, std::string& key);
  bool object(Json& out);
  bool array(Json& out);
  bool escape(std::string& out);
  bool hex4(std::uint32_t& out);
  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size()) return false;
    if (std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }
  // Length of the well-formed UTF-8 sequence at p_ (Unicode table 3-7, the
  // one nlohmann enforces), 0 if it is not one.
  std::size_t utf8_length() const;

  const char* p_;
  const char* end_;
  std::size_t depth_ = 0;
  std::size_t max_depth_;
};

bool in(unsigned char c, unsigned char lo, unsigned char hi) {
  return c >= lo && c <= hi;
}

std::size_t Scanner::utf8_length() const {
  const auto left = static_cast<std::size_t>(end_ - p_);
  auto at = [&](std::size_t i) { return static_cast<unsigned char>(p_[i]); };
  const unsigned char c = at(0);
  auto tail = [&](std::size_t n, unsigned char lo, unsigned char hi) -> std::size_t {
    if (left < n + 1 || !in(at(1), lo, hi)) return 0;
    for (std::size_t i = 2; i <= n; ++i) {
      if (!in(at(i), 0x80, 0xBF)) return 0;
    }
    return n + 1;
  };
  if (in(c, 0xC2, 0xDF)) return tail(1, 0x80, 0xBF);
  if (c == 0xE0) return tail(2, 0xA0, 0xBF);
  if (in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF)) return tail(2, 0x80, 0xBF);
  if (c == 0xED) return tail(2, 0x80, 0x9F);
  if (c == 0xF0) return tail(3, 0x90, 0xBF);
  if (in(c, 0xF1, 0xF3)) return tail(3, 0x80, 0xBF);
  if (c == 0xF4) return tail(3, 0x80, 0x8F);
  return 0;
}

bool Scanner::string(std::string& out) {
  ++p_;  // the opening quote
  out.clear();
  const char* run = p_;  // plain bytes not yet copied
  while (p_ != end_) {
    // Plain bytes eight at a time, up to the first that needs a look.
    if constexpr (std::endian::native == std::endian::little) {
      while (end_ - p_ >= 8) {
        std::uint64_t word;
        std::memcpy(&word, p_, 8);
        const std::uint64_t stops = string_stops(word);
        if (stops != 0) {
          p_ += std::countr_zero(stops) / 8;
          break;
        }
        p_ += 8;
      }
      if (p_ == end_) break;
    }
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      out.append(run, p_);
      ++p_;
      return true;
    }
    if (c == '\\') {
      out.append(run, p_);
      if (!escape(out)) return false;
      run = p_;
    } else if (c < 0x20) {
      return false;  // control characters must be escaped
    } else if (c < 0x80) {
      ++p_;
    } else {
      const std::size_t n = utf8_length();
      if (n == 0) return false;
      p_ += n;
    }
  }
  return false;
}

bool Scanner::hex4(std::uint32_t& out) {
  if (end_ - p_ < 4) return false;
  out = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = *p_++;
    out <<= 4;
    if (c >= '0' && c <= '9') {
      out |= static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      out |= static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      out |= static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
  }
  return true;
}

bool Scanner::escape(std::string& out) {
  ++p_;  // the backslash
  if (p_ == end_) return false;
  const char c = *p_++;
  switch (c) {
    case '"':
    case '\\':
    case '/':
      out += c;
      return true;
    case 'b':
      out += '\b';
      return true;
    case 'f':
      out += '\f';
      return true;
    case 'n':
      out += '\n';
      return true;
    case 'r':
      out += '\r';
      return true;
    case 't':
      out += '\t';
      return true;
    case 'u':
      break;
    default:
      return false;
  }
  std::uint32_t cp = 0;
  if (!hex4(cp)) return false;
  if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate alone
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    std::uint32_t low = 0;
    if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
    p_ += 2;
    if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  }
  auto byte = [&](std::uint32_t b) { out += static_cast<char>(b); };
  if (cp < 0x80) {
    byte(cp);
  } else if (cp < 0x800) {
    byte(0xC0 | (cp >> 6));
    byte(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    byte(0xE0 | (cp >> 12));
    byte(0x80 | ((cp >> 6) & 0x3F));
    byte(0x80 | (cp & 0x3F));
  } else {
    byte(0xF0 | (cp >> 18));
    byte(0x80 | ((cp >> 12) & 0x3F));
    byte(0x80 | ((cp >> 6) & 0x3F));
    byte(0x80 | (cp & 0x3F));
  }
  return true;
}

bool Scanner::number(Json& out) {
  auto digit = [&] { return p_ != end_ && *p_ >= '0' && *p_ <= '9'; };
  const char* start = p_;
  const bool negative = *p_ == '-';
  if (negative) ++p_;
  if (p_ != end_ && *p_ == '0') {
    ++p_;
  } else if (digit()) {
    while (digit()) ++p_;
  } else {
    return false;
  }
  bool fraction = false;
  if (p_ != end_ && *p_ == '.') {
    ++p_;
    if (!digit()) return false;
    while (digit()) ++p_;
    fraction = true;
  }
  if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (!digit()) return false;
    while (digit()) ++p_;
    fraction = true;
  }
  // nlohmann: integers as int64 when negative, uint64 otherwise, a double
  // beyond those (declined here); anything else a double, refused when not
  // finite. from_chars rounds exactly as strtod does.
  if (fraction) {
    double d = 0;
    auto [end, ec] = std::from_chars(start, p_, d);
    if (ec != std::errc{} || end != p_ || !std::isfinite(d)) return false;
    out = d;
  } else if (negative) {
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(start, p_, n);
    if (ec != std::errc{} || end != p_) return false;
    out = n;
  } else {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(start, p_, n);
    if (ec != std::errc{} || end != p_) return false;
    out = n;
  }
  return true;
}

template <class OnMember>
bool Scanner::members(OnMember&& on_member) {
  ++p_;  // {
  if (!enter()) return false;
  if (!consume('}')) {
    std::string key;
    do {
      if (!next_is('"') || !string(key) || !consume(':')) return false;
      if (!on_member(key)) return false;
    } while (consume(','));
    if (!consume('}')) return false;
  }
  leave();
  return true;
}

bool Scanner::member_into(Json::object_t& object, std::string& key) {
  // A repeated key: the last one wins, as in nlohmann's DOM.
  Json& member = object.try_emplace(std::move(key)).first->second;
  member = nullptr;
  return value(member);
}

bool Scanner::object(Json& out) {
  out = Json::object();
  auto& object = out.get_ref<Json::object_t&>();
  return members([&](std::string& key) { return member_into(object, key); });
}

bool Scanner::tool_call_params(ToolCallParams& call, Json& rest) {
  return members([&](std::string& key) {
    // A name that is not a string, or either member twice: the general
    // path, whose DOM keeps the last of repeated members, decides.
    if (key == "name") {
      return !call.name && next_is('"') && string(call.name.emplace());
    }
    if (key == "arguments") return !call.arguments && value(call.arguments.emplace());
    if (rest.is_null()) rest = Json::object();
    return member_into(rest.get_ref<Json::object_t&>(), key);
  });
}

bool Scanner::array(Json& out) {
  ++p_;  // [
  if (!enter()) return false;
  out = Json::array();
  auto& items = out.get_ref<Json::array_t&>();
  if (!consume(']')) {
    do {
      items.emplace_back();
      if (!value(items.back())) return false;
    } while (consume(','));
    if (!consume(']')) return false;
  }
  leave();
  return true;
}

bool Scanner::value(Json& out) {
  skip_space();
  if (p_ == end_) return false;
  switch (*p_) {
    case '{':
      return object(out);
    case '[':
      return array(out);
    case '"':
      out = Json::string_t();
      return string(out.get_ref<Json::string_t&>());
    case 't':
      out = true;
      return literal("true");
    case 'f':
      out = false;
      return literal("false");
    case 'n':
      out = nullptr;
      return literal("null");
    default:
      return number(out);
  }
}

// An id Id::from_json accepts: int64 integers and strings up to kMaxIdBytes.
std::optional<Id> read_id(Scanner& s) {
  if (s.next_is('"')) {
    std::string text;
    if (!s.string(text) || text.size() > kMaxIdBytes) return std::nullopt;
    return Id(std::move(text));
  }
  Json n;
  if (!s.value(n)) return std::nullopt;
  if (n.is_number_unsigned()) {
    const auto u = n.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return Id(static_cast<std::int64_t>(u));
  }
  if (n.is_number_integer()) return Id(n.get<std::int64_t>());
  return std::nullopt;
}

}  // namespace

std::optional<Request> scan_request(std::string_view line, std::size_t max_depth) {
  Scanner s(line, max_depth);
  if (!s.consume('{') || !s.enter()) return std::nullopt;
  bool version = false;
  std::optional<Id> id;
  std::optional<std::string> method;
  Json params;  // null: absent
  bool has_params = false;
  std::optional<ToolCallParams> tool_call;
  do {
    std::string key;
    if (!s.next_is('"') || !s.string(key) || !s.consume(':')) return std::nullopt;
    const std::string_view name = key;
    if (name == "jsonrpc" && !version) {
      std::string v;
      if (!s.next_is('"') || !s.string(v) || v != "2.0") return std::nullopt;
      version = true;
    } else if (name == "id" && !id) {
      id = read_id(s);
      if (!id) return std::nullopt;
    } else if (name == "method" && !method) {
      method.emplace();
      if (!s.next_is('"') || !s.string(*method)) return std::nullopt;
    } else if (name == "params" && !has_params) {
      if (!s.next_is('{')) return std::nullopt;
      // A tools/call whose method came first: name and arguments go
      // straight where tools/call wants them (see ToolCallParams).
      if (method && *method == "tools/call") {
        if (!s.tool_call_params(tool_call.emplace(), params)) return std::nullopt;
      } else if (!s.value(params)) {
        return std::nullopt;
      }
      has_params = true;
    } else {
      // Any other member, or one repeated: the general path decides.
      return std::nullopt;
    }
  } while (s.consume(','));
  if (!s.consume('}') || !s.at_end()) return std::nullopt;
  if (!version || !id || !method) return std::nullopt;
  return Request{std::move(*id), std::move(*method), std::move(params), std::move(tool_call)};
}

}  // namespace brig::protocol
