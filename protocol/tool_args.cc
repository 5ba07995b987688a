#include "protocol/tool_args.h"

#include <cmath>

#include "protocol/json_encode.h"
#include "protocol/text.h"

namespace brig::protocol {

Json IntegerArg::schema(std::string description) const {
  return Json{{"type", "integer"},
              {"minimum", min},
              {"maximum", max},
              {"description", std::move(description)}};
}

Result<std::int64_t> IntegerArg::read(const Json& args) const {
  const auto it = args.find(name);
  if (it == args.end()) return fallback;
  const Json& v = *it;
  // Compared before any conversion: casting a double outside int64's range
  // to an integer is undefined behaviour, and an unsigned above INT64_MAX
  // would wrap to a negative.
  bool in_range = false;
  std::int64_t n = 0;
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    in_range = u <= static_cast<std::uint64_t>(max) && static_cast<std::int64_t>(u) >= min;
    n = static_cast<std::int64_t>(u);
  } else if (v.is_number_integer()) {
    n = v.get<std::int64_t>();
    in_range = n >= min && n <= max;
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    // Within 2^53 every integer is exact as a double, so the cast below is
    // defined and the comparisons are exact, whatever bounds were declared.
    in_range = std::trunc(d) == d && std::fabs(d) <= static_cast<double>(kMaxJsonInteger) &&
               d >= static_cast<double>(min) && d <= static_cast<double>(max);
    if (in_range) n = static_cast<std::int64_t>(d);
  }
  if (in_range) return n;
  std::string shown;
  append_json(shown, v);
  return std::unexpected(Error{"invalid argument " + std::string(name), "",
                               "must be an integer from " + std::to_string(min) + " to " +
                                   std::to_string(max) + ", got " + clip(shown, 64),
                               0});
}

}  // namespace brig::protocol
