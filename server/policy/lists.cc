#include "server/policy/lists.h"

namespace brig::policy {
namespace {

std::optional<PathRule> read_path_table(Reader& r, const toml::table& t, const std::string& base) {
  static constexpr std::array<std::string_view, 2> kEntryKeys = {"path", "optional"};
  PathRule rule;
  bool ok = true, have_path = false;
  for (auto&& [key, value] : t) {
    if (key.str() == "path") {
      auto p = r.path(value, base + " path");
      ok = ok && p.has_value();
      if (p) rule.path = *p;
      have_path = true;
    } else if (key.str() == "optional") {
      auto b = r.boolean(value, base + " optional");
      ok = ok && b.has_value();
      rule.optional = b.value_or(false);
    } else {
      auto guess = closest(key.str(), kEntryKeys);
      r.error(
          key.source(),
          fmt::format("unknown key \"{}\" in an entry of {}; {}an entry has \"path\" and "
                      "\"optional\"",
                      key.str(), base, guess ? fmt::format("did you mean \"{}\"? ", *guess) : ""));
      ok = false;
    }
  }
  if (!have_path) {
    r.error(t, fmt::format("an entry of {} needs a path: {{ path = \"/lib64\", optional = true }}",
                           base));
    return std::nullopt;
  }
  return ok ? std::optional<PathRule>(rule) : std::nullopt;
}

std::optional<PathRule> read_path_rule(Reader& r, const toml::node& e, const Setting& s) {
  if (const toml::table* t = e.as_table()) return read_path_table(r, *t, s.base);
  if (e.is_string()) {
    if (auto p = r.path(e, s.base)) return PathRule{*p, false};
    return std::nullopt;
  }
  r.error(e, fmt::format("each entry of {} is a path string or {{ path = \"...\", optional = "
                         "true }}; found {}",
                         s.name, type_name(e)));
  return std::nullopt;
}

}  // namespace

void read_path_rules(Reader& r, std::vector<PathRule>& rules, const Setting& s,
                     PathProblem problem) {
  const toml::array* a =
      r.list(s.value, s.name,
             problem ? "[\"/dev/fuse\", { path = \"/dev/kvm\", optional = true }]"
                     : "[\"/usr\", { path = \"/lib64\", optional = true }]");
  if (a == nullptr) return;
  if (!s.add) rules.clear();
  for (const toml::node& e : *a) {
    std::optional<PathRule> rule = read_path_rule(r, e, s);
    if (!rule) continue;
    if (auto why = problem ? problem(rule->path) : std::nullopt) {
      r.error(e, fmt::format("{}: {}", s.base, *why));
      continue;
    }
    r.note(s.base + " " + rule->path, e);
    auto same = std::find_if(rules.begin(), rules.end(),
                             [&](const PathRule& other) { return other.path == rule->path; });
    if (same == rules.end()) {
      rules.push_back(*rule);
    } else {
      same->optional = same->optional && rule->optional;  // required once = required
    }
  }
}

void read_paths(Reader& r, std::vector<std::string>& paths, const Setting& s,
                std::string_view example) {
  const toml::array* a = r.list(s.value, s.name, example);
  if (a == nullptr) return;
  if (!s.add) paths.clear();
  for (const toml::node& e : *a) {
    auto p = r.path(e, s.base);
    if (!p) continue;
    r.note(s.base + " " + *p, e);
    if (std::find(paths.begin(), paths.end(), *p) == paths.end()) paths.push_back(*p);
  }
}

}  // namespace brig::policy
