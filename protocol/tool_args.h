// Integer arguments of tools, declared once: the input schema a client is
// shown and the reading a handler does come from the same name and range, so
// the range enforced is the range announced. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "jail/base/error.h"
#include "protocol/json_rpc.h"

namespace brig::protocol {

// Larger integers do not survive a JSON number in every client (JavaScript
// has 53 bits), and a bound up to here compares exactly as a double.
inline constexpr std::int64_t kMaxJsonInteger = std::int64_t{1} << 53;

// One integer argument: its name, the range it must lie in (both ends
// included) and the value an absent argument has.
struct IntegerArg {
  std::string_view name;
  std::int64_t min = 0;
  std::int64_t max = kMaxJsonInteger;
  std::int64_t fallback = 0;

  // {"type": "integer", "minimum": min, "maximum": max, "description": ...}
  Json schema(std::string description) const;
  // The argument in args, or fallback when args has no such member. Anything
  // but an integer from min to max (a fraction, 1e30, 2^64, a negative where
  // min is 0, a string, null) is an error naming the argument and its range:
  // never a conversion that wraps, saturates or is undefined.
  Result<std::int64_t> read(const Json& args) const;
};

}  // namespace brig::protocol
