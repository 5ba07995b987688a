#include "server/policy/reader.h"

#include <limits>

#include "server/policy/units.h"

namespace brig::policy {
namespace {

constexpr std::string_view kUnlimited = "unlimited";

}  // namespace

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number with a fraction";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "a list";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date or time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

void Reader::error(const toml::source_region& at, std::string why) {
  errors_.emplace_back(SourcePos{file_, at.begin.line, at.begin.column}, std::move(why));
}

void Reader::note(const std::string& key, const toml::node& at) {
  positions_[key] = SourcePos{file_, at.source().begin.line, at.source().begin.column};
}

std::optional<std::string> Reader::string(const toml::node& n, std::string_view key,
                                          std::string_view example) {
  if (const auto* s = n.as_string()) return s->get();
  error(n, fmt::format("{} must be a string, like {}; found {}", key, example, type_name(n)));
  return std::nullopt;
}

std::optional<bool> Reader::boolean(const toml::node& n, std::string_view key) {
  if (const auto* b = n.as_boolean()) return b->get();
  error(n, fmt::format("{} must be true or false (no quotes); found {}", key, type_name(n)));
  return std::nullopt;
}

std::optional<uint64_t> Reader::integer(const toml::node& n, std::string_view key, int64_t min,
                                        int64_t max, std::string_view alternative) {
  const auto* i = n.as_integer();
  if (i == nullptr) {
    error(n, fmt::format("{} must be a whole number{}; found {}", key, alternative, type_name(n)));
    return std::nullopt;
  }
  if (i->get() < min || i->get() > max) {
    error(n, fmt::format("{} = {} is out of range; write a number from {} to {}{}", key, i->get(),
                         min, max, alternative));
    return std::nullopt;
  }
  return static_cast<uint64_t>(i->get());
}

std::optional<std::string> Reader::path(const toml::node& n, std::string_view key) {
  auto text = string(n, key, "\"/usr\" or \"~/.cache\"");
  if (!text) return std::nullopt;
  auto expanded = expand(*text, x_);
  if (!expanded) {
    error(n, fmt::format("{}: {}", key, expanded.error()));
    return std::nullopt;
  }
  auto normal = normalize_path(*expanded);
  if (!normal) {
    error(n, fmt::format("{}: {}", key, normal.error()));
    return std::nullopt;
  }
  return *normal;
}

const toml::array* Reader::list(const toml::node& n, std::string_view key,
                                std::string_view example) {
  if (const auto* a = n.as_array()) return a;
  error(n, fmt::format("{} must be a list, like {}; found {}", key, example, type_name(n)));
  return nullptr;
}

std::optional<std::optional<uint64_t>> Reader::size(const toml::node& n, const std::string& key,
                                                    bool allow_unlimited) {
  const std::string alternative = allow_unlimited ? " or \"unlimited\"" : "";
  if (const auto* i = n.as_integer()) {
    if (i->get() < 0) {
      error(n,
            fmt::format("{} cannot be negative; write a size like \"512MiB\"{}", key, alternative));
      return std::nullopt;
    }
    return std::optional<uint64_t>(static_cast<uint64_t>(i->get()));
  }
  const auto* s = n.as_string();
  if (s == nullptr) {
    error(n, fmt::format("{} must be a size like \"512MiB\"{}; found {}", key, alternative,
                         type_name(n)));
    return std::nullopt;
  }
  if (allow_unlimited && s->get() == kUnlimited) return std::optional<uint64_t>();
  auto bytes = parse_size(s->get());
  if (!bytes) {
    error(n, fmt::format("{}: {}{}", key, bytes.error(),
                         allow_unlimited ? ", or \"unlimited\" for no limit" : ""));
    return std::nullopt;
  }
  return std::optional<uint64_t>(*bytes);
}

std::optional<std::optional<std::chrono::milliseconds>> Reader::duration(const toml::node& n,
                                                                         const std::string& key) {
  const auto* s = n.as_string();
  if (s == nullptr) {
    error(n, fmt::format("{} must be a duration like \"30m\" (quoted), or \"unlimited\"; found {}",
                         key, type_name(n)));
    return std::nullopt;
  }
  if (s->get() == kUnlimited) return std::optional<std::chrono::milliseconds>();
  auto d = parse_duration(s->get());
  if (!d) {
    error(n, fmt::format("{}: {}, or \"unlimited\" for no limit", key, d.error()));
    return std::nullopt;
  }
  if (d->count() == 0) {
    error(n, fmt::format("{} must be longer than 0; write \"unlimited\" for no limit", key));
    return std::nullopt;
  }
  return std::optional<std::chrono::milliseconds>(*d);
}

std::optional<std::optional<uint64_t>> Reader::count(const toml::node& n, const std::string& key,
                                                     int64_t min) {
  if (const auto* s = n.as_string(); s != nullptr && s->get() == kUnlimited)
    return std::optional<uint64_t>();
  auto v = integer(n, key, min, std::numeric_limits<int32_t>::max(), " or \"unlimited\"");
  if (!v) return std::nullopt;
  return std::optional<uint64_t>(*v);
}

void Reader::set(bool& field, const Setting& s) {
  if (auto b = boolean(s.value, s.name)) {
    field = *b;
    note(s.name, s.value);
  }
}

}  // namespace brig::policy
