#include "server/files/line_diff.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace brig::files {
namespace {

// Myers costs (N+M)·D time and D² memory for its trace; past these bounds
// the middle is replaced as a block.
constexpr long kMaxEditDistance = 2000;
constexpr long kWorkBudget = 100'000'000;

// Lines keep their '\n', so "x" at the end of a file differs from "x\n".
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

enum class Op : char { equal = ' ', remove = '-', add = '+' };

struct Step {
  Op op;
  std::size_t old_index;  // for equal and remove
  std::size_t new_index;  // for equal and add
};

// The shortest edit script from a to b, or false when it is longer than the
// bounds above allow.
bool myers(const std::vector<int>& a, const std::vector<int>& b, std::vector<Step>& out) {
  const long n = static_cast<long>(a.size());
  const long m = static_cast<long>(b.size());
  const long max_d = std::min({n + m, kMaxEditDistance, std::max(100L, kWorkBudget / (n + m + 1))});
  const long offset = max_d + 1;
  std::vector<long> v(static_cast<std::size_t>(2 * max_d + 3), 0);
  // trace[d] holds v[k] for k in [-d, d] after step d.
  std::vector<std::vector<int>> trace;
  long found_d = -1;
  for (long d = 0; d <= max_d; ++d) {
    for (long k = -d; k <= d; k += 2) {
      long x;
      if (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1])) {
        x = v[offset + k + 1];
      } else {
        x = v[offset + k - 1] + 1;
      }
      long y = x - k;
      while (x < n && y < m && a[x] == b[y]) {
        ++x;
        ++y;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
    trace.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
    if (found_d >= 0) break;
  }
  if (found_d < 0) return false;
  std::vector<Step> rev;
  long x = n, y = m;
  for (long d = found_d; d > 0; --d) {
    const std::vector<int>& prev = trace[d - 1];  // indices k in [-(d-1), d-1]
    const auto at = [&](long k) { return prev[k + (d - 1)]; };
    const long k = x - y;
    long prev_k;
    if (k == -d || (k != d && at(k - 1) < at(k + 1))) {
      prev_k = k + 1;
    } else {
      prev_k = k - 1;
    }
    const long prev_x = at(prev_k);
    const long prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x;
      --y;
      rev.push_back({Op::equal, static_cast<std::size_t>(x), static_cast<std::size_t>(y)});
    }
    if (x == prev_x) {
      --y;
      rev.push_back({Op::add, static_cast<std::size_t>(x), static_cast<std::size_t>(y)});
    } else {
      --x;
      rev.push_back({Op::remove, static_cast<std::size_t>(x), static_cast<std::size_t>(y)});
    }
  }
  while (x > 0 && y > 0) {
    --x;
    --y;
    rev.push_back({Op::equal, static_cast<std::size_t>(x), static_cast<std::size_t>(y)});
  }
  out.assign(rev.rbegin(), rev.rend());
  return true;
}

std::string range(std::size_t start, std::size_t count) {
  // diff -u: a hunk with no lines on one side names the line before it.
  const std::size_t first = count == 0 ? start : start + 1;
  if (count == 1) return fmt::format("{}", first);
  return fmt::format("{},{}", first, count);
}

void append_line(std::string& out, char tag, std::string_view line) {
  out += tag;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

}  // namespace

Diff unified_diff(std::string_view old_text, std::string_view new_text, std::string_view old_label,
                  std::string_view new_label, std::size_t context) {
  Diff diff;
  if (old_text == new_text) return diff;
  const std::vector<std::string_view> a = split_lines(old_text);
  const std::vector<std::string_view> b = split_lines(new_text);

  std::size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;

  // Lines become small integers so the search compares ints, not strings.
  std::unordered_map<std::string_view, int> ids;
  const auto ids_of = [&](const std::vector<std::string_view>& lines) {
    std::vector<int> out;
    out.reserve(lines.size() - prefix - suffix);
    for (std::size_t i = prefix; i < lines.size() - suffix; ++i)
      out.push_back(ids.emplace(lines[i], static_cast<int>(ids.size())).first->second);
    return out;
  };
  const std::vector<int> mid_a = ids_of(a);
  const std::vector<int> mid_b = ids_of(b);

  std::vector<Step> steps;
  for (std::size_t i = 0; i < prefix; ++i) steps.push_back({Op::equal, i, i});
  std::vector<Step> middle;
  if (!myers(mid_a, mid_b, middle)) {
    middle.clear();
    for (std::size_t i = 0; i < mid_a.size(); ++i) middle.push_back({Op::remove, i, 0});
    for (std::size_t j = 0; j < mid_b.size(); ++j) middle.push_back({Op::add, mid_a.size(), j});
  }
  for (const Step& s : middle) steps.push_back({s.op, s.old_index + prefix, s.new_index + prefix});
  for (std::size_t i = 0; i < suffix; ++i)
    steps.push_back({Op::equal, a.size() - suffix + i, b.size() - suffix + i});

  diff.text = fmt::format("--- {}\n+++ {}\n", old_label, new_label);
  std::size_t i = 0;
  while (i < steps.size()) {
    if (steps[i].op == Op::equal) {
      ++i;
      continue;
    }
    // A hunk: from `context` lines before this change to `context` lines
    // after the last change that lies within 2*context equal lines of the
    // previous one.
    const std::size_t begin = i >= context ? i - context : 0;
    std::size_t end = i;
    std::size_t equal_run = 0;
    for (std::size_t j = i; j < steps.size(); ++j) {
      if (steps[j].op == Op::equal) {
        if (++equal_run > 2 * context) break;
      } else {
        equal_run = 0;
        end = j + 1;
      }
    }
    const std::size_t stop = std::min(steps.size(), end + context);
    std::size_t old_count = 0, new_count = 0;
    for (std::size_t j = begin; j < stop; ++j) {
      if (steps[j].op != Op::add) ++old_count;
      if (steps[j].op != Op::remove) ++new_count;
    }
    const Step& first = steps[begin];
    diff.text += fmt::format("@@ -{} +{} @@\n", range(first.old_index, old_count),
                             range(first.new_index, new_count));
    for (std::size_t j = begin; j < stop; ++j) {
      const Step& s = steps[j];
      switch (s.op) {
        case Op::equal:
          append_line(diff.text, ' ', a[s.old_index]);
          break;
        case Op::remove:
          append_line(diff.text, '-', a[s.old_index]);
          ++diff.stats.removed;
          break;
        case Op::add:
          append_line(diff.text, '+', b[s.new_index]);
          ++diff.stats.added;
          break;
      }
    }
    i = stop;
  }
  return diff;
}

}  // namespace brig::files
