#include "server/search/literal_finder.h"

#include <emmintrin.h>

#include <array>
#include <cstring>

namespace brig::search {
namespace {

bool is_alpha(unsigned char c) {
  return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

unsigned char lower(unsigned char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c | 0x20) : c;
}

// Bytes from most to least common in source trees (a rough order, as from
// counting a kernel tree); bytes not listed are rarer than all of them.
constexpr std::string_view kCommonFirst =
    " e\ttn_ris\naoclduf,;p()m*h=gb0x1vy>k-/.2STEA:R&I{}NLCO3DP\"48M#5U6F[]G7B9H<Kw|!+%V'XY"
    "\\?QWjJ@Zq~^$`z";

const std::array<unsigned char, 256> kRank = [] {
  std::array<unsigned char, 256> rank{};
  const std::size_t n = kCommonFirst.size();
  for (std::size_t i = 0; i < n; ++i) {
    rank[static_cast<unsigned char>(kCommonFirst[i])] = static_cast<unsigned char>(255 - i * 2);
  }
  return rank;
}();

}  // namespace

unsigned byte_rank(unsigned char c) {
  return kRank[c];
}

LiteralFinder::LiteralFinder(std::string needle, bool ascii_fold)
    : needle_(std::move(needle)), fold_(ascii_fold) {
  if (fold_)
    for (char& c : needle_) c = static_cast<char>(lower(static_cast<unsigned char>(c)));
  // A letter matched in both cases is about twice as common.
  const auto cost = [&](std::size_t i) {
    const auto c = static_cast<unsigned char>(needle_[i]);
    unsigned r = kRank[c];
    if (fold_ && is_alpha(c)) r += kRank[c & ~0x20u];
    return r;
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < needle_.size(); ++i)
    if (cost(i) < cost(best)) best = i;
  std::size_t second = best;
  for (std::size_t i = 0; i < needle_.size(); ++i) {
    if (i == best) continue;
    // A different byte value filters better than the same one again.
    if (second == best || cost(i) < cost(second) ||
        (cost(i) == cost(second) && needle_[second] == needle_[best] &&
         needle_[i] != needle_[best]))
      second = i;
  }
  rare1_ = std::min(best, second);
  rare2_ = std::max(best, second);
}

bool LiteralFinder::equal_at(const char* p) const {
  if (!fold_) return std::memcmp(p, needle_.data(), needle_.size()) == 0;
  for (std::size_t i = 0; i < needle_.size(); ++i)
    if (lower(static_cast<unsigned char>(p[i])) != static_cast<unsigned char>(needle_[i]))
      return false;
  return true;
}

std::size_t LiteralFinder::find(std::string_view haystack, std::size_t from) const {
  const std::size_t n = needle_.size();
  if (from > haystack.size() || haystack.size() - from < n) return std::string_view::npos;
  const char* const base = haystack.data();
  const std::size_t last = haystack.size() - n;  // the last possible start
  const auto b1 = static_cast<unsigned char>(needle_[rare1_]);
  const auto b2 = static_cast<unsigned char>(needle_[rare2_]);
  // Folding a letter is OR-ing 0x20 into the text byte before comparing;
  // no other byte becomes a lower-case letter that way.
  const bool fold1 = fold_ && is_alpha(b1);
  const bool fold2 = fold_ && is_alpha(b2);
  const __m128i v1 = _mm_set1_epi8(static_cast<char>(b1));
  const __m128i v2 = _mm_set1_epi8(static_cast<char>(b2));
  const __m128i m1 = _mm_set1_epi8(fold1 ? 0x20 : 0);
  const __m128i m2 = _mm_set1_epi8(fold2 ? 0x20 : 0);
  std::size_t pos = from;
  while (pos + 16 <= last + 1) {
    const __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + pos + rare1_));
    const __m128i c2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + pos + rare2_));
    const __m128i eq = _mm_and_si128(_mm_cmpeq_epi8(_mm_or_si128(c1, m1), v1),
                                     _mm_cmpeq_epi8(_mm_or_si128(c2, m2), v2));
    auto mask = static_cast<unsigned>(_mm_movemask_epi8(eq));
    while (mask != 0) {
      const std::size_t at = pos + static_cast<std::size_t>(__builtin_ctz(mask));
      if (equal_at(base + at)) return at;
      mask &= mask - 1;
    }
    pos += 16;
  }
  for (; pos <= last; ++pos) {
    const auto c1 = static_cast<unsigned char>(base[pos + rare1_]);
    if ((fold1 ? (c1 | 0x20) : c1) != b1) continue;
    if (equal_at(base + pos)) return pos;
  }
  return std::string_view::npos;
}

}  // namespace brig::search
