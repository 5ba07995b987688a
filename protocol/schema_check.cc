#include "protocol/schema_check.h"

#include <cmath>

#include "protocol/text.h"

namespace brig::protocol {

namespace {

using Failure = std::optional<std::string>;

bool is_integral(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  // JSON Schema counts 2.0 as an integer.
  return std::isfinite(d) && std::floor(d) == d;
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

bool has_type(const Json& v, std::string_view type) {
  if (type == "integer") return is_integral(v);
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "null") return v.is_null();
  return false;
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

std::string at(std::string_view path, std::string_view what) {
  std::string s(path);
  s += ": ";
  s += what;
  return s;
}

Failure check(const Json& value, const Json& schema, const std::string& path);

Failure check_type(const Json& value, const Json& type, const std::string& path) {
  if (type.is_string()) {
    const auto& t = type.get_ref<const std::string&>();
    if (has_type(value, t)) return {};
    return at(path, "expected " + t + ", got " + type_of(value));
  }
  if (!type.is_array()) return {};
  std::string names;
  for (const auto& t : type) {
    if (!t.is_string()) continue;
    if (has_type(value, t.get_ref<const std::string&>())) return {};
    if (!names.empty()) names += " or ";
    names += t.get<std::string>();
  }
  return at(path, "expected " + names + ", got " + type_of(value));
}

Failure check_number(const Json& value, const Json& schema, const std::string& path) {
  if (!value.is_number()) return {};
  double v = value.get<double>();
  auto bound = [&](const char* key) -> std::optional<double> {
    auto it = schema.find(key);
    if (it == schema.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  if (auto b = bound("minimum"); b && v < *b) {
    return at(path, "must be >= " + show(schema["minimum"]) + ", got " + show(value));
  }
  if (auto b = bound("maximum"); b && v > *b) {
    return at(path, "must be <= " + show(schema["maximum"]) + ", got " + show(value));
  }
  if (auto b = bound("exclusiveMinimum"); b && v <= *b) {
    return at(path, "must be > " + show(schema["exclusiveMinimum"]) + ", got " + show(value));
  }
  if (auto b = bound("exclusiveMaximum"); b && v >= *b) {
    return at(path, "must be < " + show(schema["exclusiveMaximum"]) + ", got " + show(value));
  }
  return {};
}

std::optional<std::size_t> count(const Json& schema, const char* key) {
  auto it = schema.find(key);
  if (it == schema.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::size_t>();
}

Failure check_string(const Json& value, const Json& schema, const std::string& path) {
  if (!value.is_string()) return {};
  std::size_t n = code_points(value.get_ref<const std::string&>());
  if (auto min = count(schema, "minLength"); min && n < *min) {
    return at(path, "must be at least " + std::to_string(*min) + " characters long");
  }
  if (auto max = count(schema, "maxLength"); max && n > *max) {
    return at(path, "must be at most " + std::to_string(*max) + " characters long");
  }
  return {};
}

Failure check_array(const Json& value, const Json& schema, const std::string& path) {
  if (!value.is_array()) return {};
  if (auto min = count(schema, "minItems"); min && value.size() < *min) {
    return at(path, "must have at least " + std::to_string(*min) + " items");
  }
  if (auto max = count(schema, "maxItems"); max && value.size() > *max) {
    return at(path, "must have at most " + std::to_string(*max) + " items");
  }
  if (auto items = schema.find("items"); items != schema.end()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (auto f = check(value[i], *items, path + "[" + std::to_string(i) + "]")) return f;
    }
  }
  return {};
}

Failure check_object(const Json& value, const Json& schema, const std::string& path) {
  if (!value.is_object()) return {};
  if (auto req = schema.find("required"); req != schema.end() && req->is_array()) {
    for (const auto& name : *req) {
      if (name.is_string() && !value.contains(name.get_ref<const std::string&>())) {
        return at(path + "." + name.get<std::string>(), "required property missing");
      }
    }
  }
  static const Json kNoProperties = Json::object();
  auto props_it = schema.find("properties");
  const Json& props = props_it != schema.end() && props_it->is_object() ? *props_it : kNoProperties;
  auto extra = schema.find("additionalProperties");
  for (const auto& [key, member] : value.items()) {
    std::string member_path = path + "." + key;
    if (auto p = props.find(key); p != props.end()) {
      if (auto f = check(member, *p, member_path)) return f;
    } else if (extra != schema.end()) {
      if (extra->is_boolean() && !extra->get<bool>()) return at(member_path, "unknown property");
      if (auto f = check(member, *extra, member_path)) return f;
    }
  }
  return {};
}

Failure check_combinators(const Json& value, const Json& schema, const std::string& path) {
  if (auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
    for (const auto& s : *all) {
      if (auto f = check(value, s, path)) return f;
    }
  }
  if (auto any = schema.find("anyOf"); any != schema.end() && any->is_array()) {
    Failure first;
    bool matched = false;
    for (const auto& s : *any) {
      auto f = check(value, s, path);
      if (!f) {
        matched = true;
        break;
      }
      if (!first) first = f;
    }
    if (!matched && first) return at(path, "matches none of anyOf (first: " + *first + ")");
  }
  if (auto one = schema.find("oneOf"); one != schema.end() && one->is_array()) {
    std::size_t matches = 0;
    for (const auto& s : *one) matches += !check(value, s, path);
    if (matches != 1) {
      return at(path, "must match exactly one of oneOf, matches " + std::to_string(matches));
    }
  }
  if (auto no = schema.find("not"); no != schema.end() && !check(value, *no, path)) {
    return at(path, "matches a schema it must not match");
  }
  return {};
}

Failure check(const Json& value, const Json& schema, const std::string& path) {
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return {};
    return at(path, "not allowed");
  }
  if (!schema.is_object()) return {};
  if (auto type = schema.find("type"); type != schema.end()) {
    if (auto f = check_type(value, *type, path)) return f;
  }
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    bool found = false;
    for (const auto& option : *e) found = found || option == value;
    if (!found) return at(path, "must be one of " + show(*e) + ", got " + show(value));
  }
  if (auto c = schema.find("const"); c != schema.end() && *c != value) {
    return at(path, "must be " + show(*c) + ", got " + show(value));
  }
  for (auto* part : {check_number, check_string, check_array, check_object, check_combinators}) {
    if (auto f = part(value, schema, path)) return f;
  }
  return {};
}

}  // namespace

std::optional<std::string> check_schema(const Json& value, const Json& schema,
                                        std::string_view path) {
  return check(value, schema, std::string(path));
}

}  // namespace brig::protocol
