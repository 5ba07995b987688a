// Validates tool arguments against the JSON Schema subset tools declare. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "protocol/json_rpc.h"

namespace brig::protocol {

// Checks value against schema and returns the first violation as text that
// names the field path, e.g. "arguments.count: expected integer, got string";
// empty means valid. Keywords enforced: type (name or list), enum, const,
// properties, required, additionalProperties (bool or schema), items,
// minItems, maxItems, minLength, maxLength (in code points), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, anyOf, oneOf, allOf, not. Other keywords
// (description, default, format, pattern, $schema, ...) are annotations here
// and accepted without checking. A schema that is `true`, `{}` or not an
// object accepts everything; `false` accepts nothing.
std::optional<std::string> check_schema(const Json& value, const Json& schema,
                                        std::string_view path = "arguments");

}  // namespace brig::protocol
