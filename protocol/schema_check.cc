#include "protocol/schema_check.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "protocol/text.h"

namespace brig::protocol {

namespace {

using Failure = std::optional<std::string>;

// The JSON types a schema can name; kUnknown (a name JSON Schema does not
// have) matches nothing.
enum class Type : std::uint8_t {
  kInteger,
  kNumber,
  kString,
  kBoolean,
  kObject,
  kArray,
  kNull,
  kUnknown
};

Type type_named(std::string_view name) {
  if (name == "integer") return Type::kInteger;
  if (name == "number") return Type::kNumber;
  if (name == "string") return Type::kString;
  if (name == "boolean") return Type::kBoolean;
  if (name == "object") return Type::kObject;
  if (name == "array") return Type::kArray;
  if (name == "null") return Type::kNull;
  return Type::kUnknown;
}

bool is_integral(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  // JSON Schema counts 2.0 as an integer.
  return std::isfinite(d) && std::floor(d) == d;
}

bool has_type_of(const Json& v, Type type) {
  switch (type) {
    case Type::kInteger:
      return is_integral(v);
    case Type::kNumber:
      return v.is_number();
    case Type::kString:
      return v.is_string();
    case Type::kBoolean:
      return v.is_boolean();
    case Type::kObject:
      return v.is_object();
    case Type::kArray:
      return v.is_array();
    case Type::kNull:
      return v.is_null();
    case Type::kUnknown:
      break;
  }
  return false;
}

std::string type_of(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

std::string show(const Json& v) {
  return clip(v.dump(-1, ' ', false, Json::error_handler_t::replace), 120);
}

// Characters, not bytes: what a schema author means by maxLength.
std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Where the checked value sits, e.g. arguments.tags[1]: a chain on the stack,
// spelled out only for a failure (valid arguments never pay for the text).
struct Path {
  const Path* parent = nullptr;
  std::string_view name;  // the root's whole text, or a member's key
  std::size_t index = 0;
  bool item = false;

  std::string text() const {
    if (parent == nullptr) return std::string(name);
    std::string s = parent->text();
    if (item) {
      s += "[" + std::to_string(index) + "]";
    } else {
      s += ".";
      s += name;
    }
    return s;
  }
  Path member(std::string_view key) const { return Path{this, key, 0, false}; }
  Path element(std::size_t i) const { return Path{this, {}, i, true}; }
};

std::string at(const Path& path, std::string_view what) {
  std::string s = path.text();
  s += ": ";
  s += what;
  return s;
}

// A numeric bound and how the error message shows it.
struct Bound {
  double value;
  std::string shown;
};

std::optional<Bound> bound(const Json& schema, const char* key) {
  auto it = schema.find(key);
  if (it == schema.end() || !it->is_number()) return std::nullopt;
  return Bound{it->get<double>(), show(*it)};
}

std::optional<std::size_t> count(const Json& schema, const char* key) {
  auto it = schema.find(key);
  if (it == schema.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::size_t>();
}

}  // namespace

// One schema, its keywords read out; absent ones are empty.
struct SchemaChecker::Node {
  explicit Node(const Json& schema);

  Failure check(const Json& value, const Path& path) const;
  Failure check_number(const Json& value, const Path& path) const;
  Failure check_string(const Json& value, const Path& path) const;
  Failure check_array(const Json& value, const Path& path) const;
  Failure check_object(const Json& value, const Path& path) const;
  Failure check_combinators(const Json& value, const Path& path) const;

  bool accept_all = false;  // true, or not an object
  bool reject_all = false;  // false

  bool has_type = false;
  std::vector<Type> types;  // the string members of a type list, in order
  std::string type_names;   // "string or null"

  std::optional<Json> enum_values;  // an array
  std::string enum_shown;
  std::optional<Json> const_value;
  std::string const_shown;

  std::optional<Bound> minimum, maximum, exclusive_minimum, exclusive_maximum;
  std::optional<std::size_t> min_length, max_length, min_items, max_items;
  std::unique_ptr<Node> items;

  std::vector<std::string> required;
  std::map<std::string, Node, std::less<>> properties;
  bool forbid_extra = false;                                // additionalProperties: false
  std::unique_ptr<Node> extra;                              // additionalProperties: another schema
  std::optional<std::vector<Node>> all_of, any_of, one_of;  // arrays only
  std::unique_ptr<Node> not_;
};

SchemaChecker::Node::Node(const Json& schema) {
  if (schema.is_boolean()) {
    accept_all = schema.get<bool>();
    reject_all = !accept_all;
    return;
  }
  if (!schema.is_object()) {
    accept_all = true;
    return;
  }
  if (auto type = schema.find("type"); type != schema.end()) {
    if (type->is_string()) {
      has_type = true;
      types.push_back(type_named(type->get_ref<const std::string&>()));
      type_names = type->get<std::string>();
    } else if (type->is_array()) {
      has_type = true;
      for (const auto& t : *type) {
        if (!t.is_string()) continue;
        types.push_back(type_named(t.get_ref<const std::string&>()));
        if (!type_names.empty()) type_names += " or ";
        type_names += t.get<std::string>();
      }
    }
  }
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    enum_values = *e;
    enum_shown = show(*e);
  }
  if (auto c = schema.find("const"); c != schema.end()) {
    const_value = *c;
    const_shown = show(*c);
  }
  minimum = bound(schema, "minimum");
  maximum = bound(schema, "maximum");
  exclusive_minimum = bound(schema, "exclusiveMinimum");
  exclusive_maximum = bound(schema, "exclusiveMaximum");
  min_length = count(schema, "minLength");
  max_length = count(schema, "maxLength");
  min_items = count(schema, "minItems");
  max_items = count(schema, "maxItems");
  if (auto it = schema.find("items"); it != schema.end()) items = std::make_unique<Node>(*it);
  if (auto req = schema.find("required"); req != schema.end() && req->is_array()) {
    for (const auto& name : *req) {
      if (name.is_string()) required.push_back(name.get<std::string>());
    }
  }
  if (auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
    for (const auto& [key, member] : props->items()) properties.emplace(key, Node(member));
  }
  if (auto it = schema.find("additionalProperties"); it != schema.end()) {
    if (it->is_boolean() && !it->get<bool>()) {
      forbid_extra = true;
    } else {
      extra = std::make_unique<Node>(*it);
    }
  }
  auto list = [&](const char* key, std::optional<std::vector<Node>>& out) {
    auto it = schema.find(key);
    if (it == schema.end() || !it->is_array()) return;
    out.emplace();
    for (const auto& s : *it) out->emplace_back(s);
  };
  list("allOf", all_of);
  list("anyOf", any_of);
  list("oneOf", one_of);
  if (auto it = schema.find("not"); it != schema.end()) not_ = std::make_unique<Node>(*it);
}

Failure SchemaChecker::Node::check_number(const Json& value, const Path& path) const {
  if (!value.is_number()) return {};
  double v = value.get<double>();
  if (minimum && v < minimum->value) {
    return at(path, "must be >= " + minimum->shown + ", got " + show(value));
  }
  if (maximum && v > maximum->value) {
    return at(path, "must be <= " + maximum->shown + ", got " + show(value));
  }
  if (exclusive_minimum && v <= exclusive_minimum->value) {
    return at(path, "must be > " + exclusive_minimum->shown + ", got " + show(value));
  }
  if (exclusive_maximum && v >= exclusive_maximum->value) {
    return at(path, "must be < " + exclusive_maximum->shown + ", got " + show(value));
  }
  return {};
}

Failure SchemaChecker::Node::check_string(const Json& value, const Path& path) const {
  if (!value.is_string() || (!min_length && !max_length)) return {};
  std::size_t n = code_points(value.get_ref<const std::string&>());
  if (min_length && n < *min_length) {
    return at(path, "must be at least " + std::to_string(*min_length) + " characters long");
  }
  if (max_length && n > *max_length) {
    return at(path, "must be at most " + std::to_string(*max_length) + " characters long");
  }
  return {};
}

Failure SchemaChecker::Node::check_array(const Json& value, const Path& path) const {
  if (!value.is_array()) return {};
  if (min_items && value.size() < *min_items) {
    return at(path, "must have at least " + std::to_string(*min_items) + " items");
  }
  if (max_items && value.size() > *max_items) {
    return at(path, "must have at most " + std::to_string(*max_items) + " items");
  }
  if (items) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (auto f = items->check(value[i], path.element(i))) return f;
    }
  }
  return {};
}

Failure SchemaChecker::Node::check_object(const Json& value, const Path& path) const {
  if (!value.is_object()) return {};
  const auto& members = value.get_ref<const Json::object_t&>();
  for (const auto& name : required) {
    if (!members.contains(name)) return at(path.member(name), "required property missing");
  }
  for (const auto& [key, member] : members) {
    const Path member_path = path.member(key);
    if (auto p = properties.find(key); p != properties.end()) {
      if (auto f = p->second.check(member, member_path)) return f;
    } else if (forbid_extra) {
      return at(member_path, "unknown property");
    } else if (extra) {
      if (auto f = extra->check(member, member_path)) return f;
    }
  }
  return {};
}

Failure SchemaChecker::Node::check_combinators(const Json& value, const Path& path) const {
  if (all_of) {
    for (const auto& s : *all_of) {
      if (auto f = s.check(value, path)) return f;
    }
  }
  if (any_of) {
    Failure first;
    bool matched = false;
    for (const auto& s : *any_of) {
      auto f = s.check(value, path);
      if (!f) {
        matched = true;
        break;
      }
      if (!first) first = f;
    }
    if (!matched && first) return at(path, "matches none of anyOf (first: " + *first + ")");
  }
  if (one_of) {
    std::size_t matches = 0;
    for (const auto& s : *one_of) matches += !s.check(value, path);
    if (matches != 1) {
      return at(path, "must match exactly one of oneOf, matches " + std::to_string(matches));
    }
  }
  if (not_ && !not_->check(value, path)) return at(path, "matches a schema it must not match");
  return {};
}

Failure SchemaChecker::Node::check(const Json& value, const Path& path) const {
  if (accept_all) return {};
  if (reject_all) return at(path, "not allowed");
  if (has_type) {
    bool matched = false;
    for (Type t : types) matched = matched || has_type_of(value, t);
    if (!matched) return at(path, "expected " + type_names + ", got " + type_of(value));
  }
  if (enum_values) {
    bool found = false;
    for (const auto& option : *enum_values) found = found || option == value;
    if (!found) return at(path, "must be one of " + enum_shown + ", got " + show(value));
  }
  if (const_value && *const_value != value) {
    return at(path, "must be " + const_shown + ", got " + show(value));
  }
  if (auto f = check_number(value, path)) return f;
  if (auto f = check_string(value, path)) return f;
  if (auto f = check_array(value, path)) return f;
  if (auto f = check_object(value, path)) return f;
  return check_combinators(value, path);
}

SchemaChecker::SchemaChecker(const Json& schema) : root_(std::make_unique<Node>(schema)) {}
SchemaChecker::~SchemaChecker() = default;
SchemaChecker::SchemaChecker(SchemaChecker&&) noexcept = default;
SchemaChecker& SchemaChecker::operator=(SchemaChecker&&) noexcept = default;

std::optional<std::string> SchemaChecker::check(const Json& value, std::string_view path) const {
  return root_->check(value, Path{nullptr, path, 0, false});
}

std::optional<std::string> check_schema(const Json& value, const Json& schema,
                                        std::string_view path) {
  return SchemaChecker(schema).check(value, path);
}

}  // namespace brig::protocol
