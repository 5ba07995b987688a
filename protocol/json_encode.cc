#include "protocol/json_encode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "protocol/string_stops.h"

namespace brig::protocol {
namespace {

using Json = nlohmann::json;

// How nlohmann writes each ASCII byte inside a string: size 0 means as it is.
struct Escape {
  std::array<char, 6> text{};
  std::uint8_t size = 0;
};

constexpr std::array<Escape, 128> kEscapes = [] {
  constexpr char kHex[] = "0123456789abcdef";  // nlohmann prints \u%04x: lowercase
  std::array<Escape, 128> t{};
  for (unsigned c = 0; c < 0x20; ++c) t[c] = {{'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]}, 6};
  t['\b'] = {{'\\', 'b'}, 2};
  t['\t'] = {{'\\', 't'}, 2};
  t['\n'] = {{'\\', 'n'}, 2};
  t['\f'] = {{'\\', 'f'}, 2};
  t['\r'] = {{'\\', 'r'}, 2};
  t['"'] = {{'\\', '"'}, 2};
  t['\\'] = {{'\\', '\\'}, 2};
  return t;
}();

// Bytes copied as they are without a closer look: printable ASCII and DEL,
// except '"' and '\\'. Everything else ends a run (an escape, or a non-ASCII
// byte whose sequence must be checked).
constexpr std::array<bool, 256> kPlain = [] {
  std::array<bool, 256> t{};
  for (unsigned c = 0x20; c < 0x80; ++c) t[c] = kEscapes[c].size == 0;
  return t;
}();

// The most output one input byte makes: a control character's \u00xx. A
// UTF-8 sequence is copied (1 output byte per input byte), an ill-formed one
// becomes U+FFFD (3 bytes for 1 or more).
constexpr std::size_t kMaxGrowth = 6;
static_assert(sizeof(Escape::text) == kMaxGrowth);

// A UTF-8 sequence starting at a byte >= 0x80: its length when well-formed;
// otherwise how many bytes nlohmann's decoder consumed before it rejected
// (the maximal subpart, at least 1), which become one U+FFFD. The byte it
// rejected on starts the next sequence, as in nlohmann. A sequence cut off by
// the end of the string consumes the rest.
struct Sequence {
  std::size_t size;
  bool valid;
};

Sequence utf8_sequence(const unsigned char* p, std::size_t left) {
  const unsigned char lead = p[0];
  std::size_t size;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the first continuation byte
  if (lead < 0xC2) {
    return {1, false};  // a continuation byte, or an overlong lead C0/C1
  } else if (lead < 0xE0) {
    size = 2;
  } else if (lead < 0xF0) {
    size = 3;
    if (lead == 0xE0) lo = 0xA0;  // overlong below U+0800
    if (lead == 0xED) hi = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (lead < 0xF5) {
    size = 4;
    if (lead == 0xF0) lo = 0x90;  // overlong below U+10000
    if (lead == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return {1, false};
  }
  for (std::size_t k = 1; k < size; ++k) {
    if (k == left) return {left, false};
    const unsigned char c = p[k];
    if (c < lo || c > hi) return {k, false};
    lo = 0x80, hi = 0xBF;
  }
  return {size, true};
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Escapes s[i, end) to w, and returns where the output ends; i moves to the
// first byte not consumed, past end when a UTF-8 sequence that starts before
// end goes on after it (it is checked against all n bytes, as nlohmann does).
// w must have kMaxGrowth bytes of room per input byte of the block.
char* escape_block(const unsigned char* p, std::size_t& i, std::size_t end, std::size_t n,
                   char* w) {
  while (i < end) {
#if defined(__SSE2__)
    // Sixteen bytes at a time, each block stored as it is and then fixed
    // up stop by stop from its mask: source text has an escape every few
    // bytes (tabs, newlines, quotes), and finding them one word at a time
    // cost more than the escapes. The rest of a block after an escape is
    // stored again, shifted, from the input; that may read and write 16
    // bytes past the block, hence the 32 bytes of input (and the room they
    // come with) required.
    while (end - i >= 32) {
      const unsigned char* block = p + i;
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(w), v);
      // Signed bytes below 0x20: the controls and every byte >= 0x80.
      auto m = static_cast<unsigned>(
          _mm_movemask_epi8(_mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                         _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                      _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))))));
      unsigned done = 0;  // bytes of the block consumed; w is where the next goes
      bool utf8 = false;
      while (m != 0) {
        const auto k = static_cast<unsigned>(std::countr_zero(m));
        w += k - done;  // the plain bytes before the stop are in place
        done = k;
        if (block[k] >= 0x80) {
          utf8 = true;
          break;
        }
        const Escape& e = kEscapes[block[k]];
        std::memcpy(w, e.text.data(), kMaxGrowth);
        w += e.size;
        done = k + 1;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(w),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + done)));
        m &= m - 1;
      }
      if (utf8) {
        i += done;
        break;  // the sequence is checked below
      }
      w += 16 - done;
      i += 16;
    }
#endif
    // Plain bytes, eight at a time: each word is stored as it is checked (the
    // room allows it); the part after its first stop byte is overwritten by
    // what follows.
    if constexpr (std::endian::native == std::endian::little) {
      while (end - i >= 8) {
        std::uint64_t word;
        std::memcpy(&word, p + i, 8);
        std::memcpy(w, &word, 8);
        if (const std::uint64_t m = string_stops(word); m != 0) {
          const auto k = static_cast<std::size_t>(std::countr_zero(m)) / 8;
          i += k;
          w += k;
          break;
        }
        i += 8;
        w += 8;
      }
    }
    while (i < end && kPlain[p[i]]) *w++ = static_cast<char>(p[i++]);
    if (i == end) break;
    if (const unsigned char c = p[i]; c < 0x80) {
      std::memcpy(w, kEscapes[c].text.data(), kMaxGrowth);
      w += kEscapes[c].size;
      ++i;
      continue;
    }
    const Sequence seq = utf8_sequence(p + i, n - i);
    if (seq.valid) {
      for (std::size_t k = 0; k < seq.size; ++k) w[k] = static_cast<char>(p[i + k]);
      w += seq.size;
    } else {
      std::memcpy(w, kReplacement.data(), kReplacement.size());
      w += kReplacement.size();
    }
    i += seq.size;
  }
  return w;
}

template <typename T>
void append_integer(std::string& out, T n) {
  std::array<char, 24> buf;
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), n);
  out.append(buf.data(), r.ptr);
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  // Most strings brig writes are short and plain (keys, ids, small values):
  // one look at each byte and one copy, without the block machinery below.
  if (n <= 64 && std::all_of(p, p + n, [](unsigned char c) { return kPlain[c]; })) {
    out.push_back('"');
    out.append(s);
    out.push_back('"');
    return;
  }
  out.push_back('"');
  std::size_t i = 0;
  while (i < n) {
    // One input byte writes at most kMaxGrowth output bytes, so a block of
    // room / kMaxGrowth bytes is escaped through a raw pointer with no checks.
    // The block follows the room left, so a string reserved for by encode()
    // is not reallocated for want of worst-case room it never uses.
    const std::size_t room = out.capacity() - out.size();
    const std::size_t block = std::min(n - i, std::max<std::size_t>(room / kMaxGrowth, 64));
    const std::size_t at = out.size();
    out.resize_and_overwrite(at + kMaxGrowth * block, [&](char* buf, std::size_t) {
      return static_cast<std::size_t>(escape_block(p, i, i + block, n, buf + at) - buf);
    });
  }
  out.push_back('"');
}

void JsonWriter::string(std::string_view s) {
  if (s.size() < kRepeatMin) return append_json_string(out_, s);
  for (const Written& w : written_) {
    if (w.in.size() == s.size() && std::memcmp(w.in.data(), s.data(), s.size()) == 0) {
      // append() of a part of the string itself is safe, reallocation included.
      out_.append(out_, w.at, w.size);
      return;
    }
  }
  const std::size_t at = out_.size();
  append_json_string(out_, s);
  written_[next_++ % written_.size()] = {s, at, out_.size() - at};
}

void JsonWriter::value(const Json& j) {
  switch (j.type()) {
    case Json::value_t::object: {
      out_.push_back('{');
      bool first = true;
      for (const auto& [key, value] : j.get_ref<const Json::object_t&>()) {
        if (!first) out_.push_back(',');
        first = false;
        append_json_string(out_, key);
        out_.push_back(':');
        this->value(value);
      }
      out_.push_back('}');
      return;
    }
    case Json::value_t::array: {
      out_.push_back('[');
      bool first = true;
      for (const auto& value : j.get_ref<const Json::array_t&>()) {
        if (!first) out_.push_back(',');
        first = false;
        this->value(value);
      }
      out_.push_back(']');
      return;
    }
    case Json::value_t::string:
      string(j.get_ref<const std::string&>());
      return;
    case Json::value_t::boolean:
      out_ += j.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::null:
      out_ += "null";
      return;
    case Json::value_t::number_integer:
      append_integer(out_, j.get<std::int64_t>());
      return;
    case Json::value_t::number_unsigned:
      append_integer(out_, j.get<std::uint64_t>());
      return;
    case Json::value_t::number_float:
    case Json::value_t::binary:
    case Json::value_t::discarded:
      // Rare in brig's messages; nlohmann's own text keeps doubles (its
      // shortest round-trip form, "null" for NaN and infinities) identical.
      out_ += j.dump(-1, ' ', false, Json::error_handler_t::replace);
      return;
  }
}

void append_json(std::string& out, const Json& j) {
  JsonWriter{out}.value(j);
}

std::size_t estimate_json_size(const Json& j) {
  switch (j.type()) {
    case Json::value_t::object: {
      const auto& object = j.get_ref<const Json::object_t&>();
      // Braces; per member its quoted key, a colon and a comma (one too many).
      std::size_t size = object.empty() ? 2 : 1;
      for (const auto& [key, value] : object) size += key.size() + 4 + estimate_json_size(value);
      return size;
    }
    case Json::value_t::array: {
      const auto& array = j.get_ref<const Json::array_t&>();
      std::size_t size = array.empty() ? 2 : 1;
      for (const auto& value : array) size += 1 + estimate_json_size(value);
      return size;
    }
    case Json::value_t::string:
      return j.get_ref<const std::string&>().size() + 2;
    default:
      return 24;  // longer than any number nlohmann writes
  }
}

}  // namespace brig::protocol
