#include "server/policy/special_keys.h"

#include <algorithm>
#include <cctype>
#include <type_traits>

#include "server/policy/lists.h"
#include "server/policy/names.h"

namespace brig::policy {
namespace {

static_assert(std::is_same_v<uid_t, uint32_t> && std::is_same_v<gid_t, uint32_t>,
              "read_host_id stores uids and gids");

bool is_var_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

void apply_env_pass(Reader& r, Policy& p, const Setting& s) {
  std::vector<std::string>& pass = p.environment.pass;
  const toml::array* a = r.list(s.value, s.name, "[\"TERM\", \"LANG\", \"LC_*\"]");
  if (a == nullptr) return;
  if (!s.add) pass.clear();
  for (const toml::node& e : *a) {
    auto name = r.string(e, "environment.pass entries", "\"TERM\" or \"LC_*\"");
    if (!name) continue;
    const std::string_view stem =
        name->ends_with('*') ? std::string_view(*name).substr(0, name->size() - 1) : *name;
    if (!is_var_name(stem) && !(name->ends_with('*') && stem.empty())) {
      r.error(e, fmt::format("\"{}\" is not a variable name; write a name like \"TERM\", or a "
                             "prefix like \"LC_*\"",
                             *name));
      continue;
    }
    if (stem.empty()) {
      r.error(e, "\"*\" would pass the whole host environment; name the variables instead");
      continue;
    }
    if (std::find(pass.begin(), pass.end(), *name) == pass.end()) pass.push_back(*name);
  }
}

void apply_env_set(Reader& r, Policy& p, const Setting& s) {
  const toml::table* t = s.value.as_table();
  if (t == nullptr) {
    r.error(s.value,
            fmt::format("environment.set must be a table, like set = {{ HOME = \"~\" }}; found {}",
                        type_name(s.value)));
    return;
  }
  for (auto&& [name, value] : *t) {
    const std::string var(name.str());
    if (!is_var_name(var)) {
      r.error(name.source(),
              fmt::format("\"{}\" is not a variable name; use letters, digits and _", var));
      continue;
    }
    const auto* text = value.as_string();
    if (text == nullptr) {
      r.error(value, fmt::format("environment.set.{} must be a string: write {} = \"...\" "
                                 "(quoted); found {}",
                                 var, var, type_name(value)));
      continue;
    }
    auto expanded = expand_value(text->get(), r.expansion());
    if (!expanded) {
      r.error(value, fmt::format("environment.set.{}: {}", var, expanded.error()));
      continue;
    }
    p.environment.set[var] = *expanded;
    r.note("environment.set." + var, value);
  }
}

void apply_memory(Reader& r, Policy& p, const Setting& s) {
  auto v = r.size(s.value, s.name, /*allow_unlimited=*/true);
  if (!v) return;
  if (*v && **v < (uint64_t{1} << 20)) {
    r.error(s.value,
            "limits.memory below 1MiB leaves no room for any program; write at least \"1MiB\"");
    return;
  }
  p.limits.memory_bytes = *v;
  r.note(s.name, s.value);
}

void read_size_limit(Reader& r, std::optional<uint64_t>& field, const Setting& s) {
  auto v = r.size(s.value, s.name, /*allow_unlimited=*/true);
  if (!v) return;
  if (*v && **v == 0) {
    r.error(s.value,
            fmt::format("{} must be more than 0; write \"unlimited\" for no limit", s.name));
    return;
  }
  field = *v;
  r.note(s.name, s.value);
}

void read_count_limit(Reader& r, std::optional<uint64_t>& field, const Setting& s, int64_t min) {
  auto v = r.count(s.value, s.name, min);
  if (!v) return;
  field = *v;
  r.note(s.name, s.value);
}

void apply_cpu_time(Reader& r, Policy& p, const Setting& s) {
  auto v = r.duration(s.value, s.name);
  if (!v) return;
  if (*v && (**v).count() % 1000 != 0) {
    r.error(s.value,
            "limits.cpu_time counts whole seconds (RLIMIT_CPU); write it as \"90s\" or \"2m\"");
    return;
  }
  p.limits.cpu_seconds =
      *v ? std::optional<uint64_t>(static_cast<uint64_t>((**v).count() / 1000)) : std::nullopt;
  r.note(s.name, s.value);
}

void apply_wall_time(Reader& r, Policy& p, const Setting& s) {
  auto v = r.duration(s.value, s.name);
  if (!v) return;
  p.limits.wall_time = *v;
  r.note(s.name, s.value);
}

void apply_as_root(Reader& r, Policy& p, const Setting& s) {
  // The old default's spelling, refused rather than read either way: its
  // meaning (host root) became a dangerous opt-in, and the new default is a
  // different jail.
  if (const auto* text = s.value.as_string(); text != nullptr && text->get() == "root") {
    r.error(s.value,
            fmt::format("{} = \"root\" was renamed: write \"mapped\" (the default: uid 0 in the "
                        "jail is the unprivileged identity.uid on the host, and the workspace "
                        "keeps its owner through an idmapped mount) or, for the old behaviour "
                        "where the jail's uid 0 is host root, \"dangerously_host_root\"",
                        s.name));
    return;
  }
  r.set(p.identity.as_root, s, names::kRootIdentities);
}

void read_host_id(Reader& r, uint32_t& field, const Setting& s) {
  // 2^32 - 1 is (uid_t)-1, "no id" to the kernel.
  auto v = r.integer(s.value, s.name, 0, int64_t{0xfffffffe}, "");
  if (!v) return;
  field = static_cast<uint32_t>(*v);
  r.note(s.name, s.value);
}

void read_net_rules(Reader& r, std::vector<NetRule>& rules, const Setting& s) {
  const toml::array* a =
      r.list(s.value, s.name, "[\"pypi.org\", \"*.pythonhosted.org\", \"10.1.2.0/24:5432\"]");
  if (a == nullptr) return;
  if (!s.add) rules.clear();
  for (const toml::node& e : *a) {
    auto text = r.string(e, s.base + " entries", "\"pypi.org\" or \"github.com:22\"");
    if (!text) continue;
    auto rule = parse_net_rule(*text);
    if (!rule) {
      r.error(e, fmt::format("{} entry \"{}\": {}", s.base, *text, rule.error().why));
      continue;
    }
    // "PyPI.org" and "pypi.org" are one rule: the first one written stays.
    const bool listed = std::any_of(rules.begin(), rules.end(), [&](const NetRule& other) {
      NetRule same = other;
      same.text = rule->text;
      return same == *rule;
    });
    if (!listed) rules.push_back(std::move(*rule));
  }
  r.note(s.base, s.value);
}

void apply_net_hosts(Reader& r, Policy& p, const Setting& s) {
  const toml::table* t = s.value.as_table();
  if (t == nullptr) {
    r.error(s.value, fmt::format("network.hosts must be a table, like hosts = {{ \"db.test\" = "
                                 "\"10.1.2.7\" }}; found {}",
                                 type_name(s.value)));
    return;
  }
  std::vector<StaticHost>& hosts = p.network.rules.hosts;
  for (auto&& [key, value] : *t) {
    const std::string written(key.str());
    auto name = parse_net_rule(written);
    if (name && (name->kind != NetRule::Kind::name || name->port)) {
      name = std::unexpected(Error{"", written,
                                   "a static host is a name, without `*.` or a port (the address "
                                   "goes on the right: \"db.test\" = \"10.1.2.7\")"});
    }
    if (!name) {
      r.error(key.source(), fmt::format("network.hosts \"{}\": {}", written, name.error().why));
      continue;
    }
    const auto* text = value.as_string();
    std::optional<Address> address = text ? parse_address(text->get()) : std::nullopt;
    if (!address) {
      r.error(value, fmt::format("network.hosts.\"{}\" must be an IPv4 or IPv6 address, like "
                                 "\"10.1.2.7\" or \"fd00::7\"; found {}",
                                 written,
                                 text ? fmt::format("\"{}\"", text->get())
                                      : std::string(type_name(value))));
      continue;
    }
    // Kept sorted by name, as `brig policy show` writes them and a load reads them back.
    auto at =
        std::lower_bound(hosts.begin(), hosts.end(), name->name,
                         [](const StaticHost& h, const std::string& n) { return h.name < n; });
    if (at != hosts.end() && at->name == name->name) {
      at->address = *address;
    } else {
      hosts.insert(at, StaticHost{name->name, *address});
    }
    r.note("network.hosts." + name->name, value);
  }
  if (!t->empty()) r.note(s.base, s.value);
}

void apply_dangerously_share(Reader& r, Policy& p, const Setting& s) {
  read_enum_list(r, p.dangerously_share, s, names::kSharedNamespaces, [](std::string_view v) {
    return v == "net" ? std::optional<std::string>(
                            "the network namespace follows network.mode; write mode = "
                            "\"dangerously_host\" in [network] to share the host's")
                      : std::nullopt;
  });
}

void apply_disabled_tools(Reader& r, Policy& p, const Setting& s) {
  // Tool names are strings in Policy; read them as indices into the known names.
  std::vector<size_t> chosen;
  for (const std::string& t : p.disabled_tools) {
    if (auto i = names::find<size_t>(t, names::kTools)) chosen.push_back(*i);
  }
  read_enum_list(r, chosen, s, names::kTools);
  p.disabled_tools.clear();
  for (size_t i : chosen) p.disabled_tools.emplace_back(names::kTools[i]);
}

}  // namespace brig::policy
