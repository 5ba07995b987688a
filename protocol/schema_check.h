// Validates tool arguments against the JSON Schema subset tools declare. Pure.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/json_rpc.h"

namespace brig::protocol {

// One schema read once into a checker: every call walks the prepared rules
// instead of looking keywords up in the schema's JSON again (tools/call checks
// the same schema for every call). Keywords enforced: type (name or list),
// enum, const, properties, required, additionalProperties (bool or schema),
// items, minItems, maxItems, minLength, maxLength (in code points), minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, anyOf, oneOf, allOf, not. Other
// keywords (description, default, format, pattern, $schema, ...) are
// annotations here and accepted without checking. A schema that is `true`,
// `{}` or not an object accepts everything; `false` accepts nothing.
class SchemaChecker {
 public:
  explicit SchemaChecker(const Json& schema);
  ~SchemaChecker();
  SchemaChecker(SchemaChecker&&) noexcept;
  SchemaChecker& operator=(SchemaChecker&&) noexcept;

  // The first violation of value, as text that names the field path, e.g.
  // "arguments.count: expected integer, got string"; empty means valid.
  std::optional<std::string> check(const Json& value, std::string_view path = "arguments") const;

  struct Node;

 private:
  std::unique_ptr<Node> root_;
};

// SchemaChecker(schema).check(value, path), for a schema used once.
std::optional<std::string> check_schema(const Json& value, const Json& schema,
                                        std::string_view path = "arguments");

}  // namespace brig::protocol
