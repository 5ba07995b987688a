#include "server/policy/suggest.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace brig::policy {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  auto eq = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  };
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (eq(a[i - 1], b[j - 1]) ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<std::string_view> closest(std::string_view typed,
                                        std::span<const std::string_view> candidates) {
  // A third of the word, at least 1 and at most 3 edits: "read_onyl" finds
  // "read_only", "pid" does not become "uts".
  const size_t limit = std::clamp<size_t>(typed.size() / 3, 1, 3);
  std::optional<std::string_view> best;
  size_t best_distance = limit + 1;
  for (std::string_view c : candidates) {
    const size_t d = edit_distance(typed, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string quoted_list(std::span<const std::string_view> items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += '"';
    out += items[i];
    out += '"';
  }
  return out;
}

}  // namespace brig::policy
