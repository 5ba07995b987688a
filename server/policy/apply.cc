#include "server/policy/apply.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "jail/spec_validate.h"
#include "server/policy/names.h"
#include "server/policy/suggest.h"
#include "server/policy/units.h"

namespace brig::policy {
namespace {

using Keys = std::span<const std::string_view>;

constexpr std::array<std::string_view, 12> kTopKeys = {
    "description", "extends",    "filesystem", "environment", "limits",  "seccomp",
    "landlock",    "namespaces", "network",    "identity",    "require", "tools"};
constexpr std::array<std::string_view, 13> kFilesystemKeys = {"workspace",
                                                              "read_only",
                                                              "read_only_add",
                                                              "read_write",
                                                              "read_write_add",
                                                              "hidden",
                                                              "hidden_add",
                                                              "tmp_size",
                                                              "private_home",
                                                              "home_size",
                                                              "dangerously_writable_git",
                                                              "dangerously_devices",
                                                              "dangerously_devices_add"};
constexpr std::array<std::string_view, 3> kEnvironmentKeys = {"pass", "pass_add", "set"};
constexpr std::array<std::string_view, 6> kLimitsKeys = {"memory",    "pids",       "cpu_time",
                                                         "file_size", "open_files", "wall_time"};
constexpr std::array<std::string_view, 1> kEnabledKeys = {"enabled"};
constexpr std::array<std::string_view, 2> kNamespacesKeys = {"dangerously_share",
                                                             "dangerously_share_add"};
constexpr std::array<std::string_view, 2> kNetworkKeys = {"mode", "loopback_servers"};
constexpr std::array<std::string_view, 4> kIdentityKeys = {"as_root", "uid", "gid",
                                                           "dangerously_unmask_root_secrets"};
constexpr std::array<std::string_view, 2> kRequireKeys = {"layers", "layers_add"};
constexpr std::array<std::string_view, 2> kToolsKeys = {"disabled", "disabled_add"};
constexpr std::array<std::string_view, 2> kPathEntryKeys = {"path", "optional"};

struct SectionKeys {
  std::string_view section;
  Keys keys;
};
constexpr std::array<SectionKeys, 10> kSections = {{
    {"filesystem", kFilesystemKeys},
    {"environment", kEnvironmentKeys},
    {"limits", kLimitsKeys},
    {"seccomp", kEnabledKeys},
    {"landlock", kEnabledKeys},
    {"namespaces", kNamespacesKeys},
    {"network", kNetworkKeys},
    {"identity", kIdentityKeys},
    {"require", kRequireKeys},
    {"tools", kToolsKeys},
}};

constexpr std::string_view kUnlimited = "unlimited";

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

bool is_var_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

class Applier {
 public:
  using Found = std::vector<std::pair<SourcePos, std::string>>;
  Applier(const std::string& file, const Expansion& x, Policy& policy, Positions& positions,
          Found& errors)
      : file_(file), x_(x), p_(policy), positions_(positions), errors_(errors) {}

  void run(const toml::table& root) {
    for (auto&& [key, node] : root) {
      const std::string_view k = key.str();
      if (k == "extends") continue;  // the loader's
      if (k == "description") {
        if (auto s = string(node, "description", "\"what this policy is for\"")) {
          p_.description = *s;
          note("description", node);
        }
        continue;
      }
      const SectionKeys* section = find_section(k);
      if (section == nullptr) {
        unknown_key(key, "", kTopKeys);
        continue;
      }
      const toml::table* table = node.as_table();
      if (table == nullptr) {
        error(node, fmt::format("{} must be a table, not {}: write [{}] on its own line and its "
                                "keys below it",
                                k, type_name(node), k));
        continue;
      }
      section_ = k;
      for (auto&& [skey, value] : *table) {
        if (std::find(section->keys.begin(), section->keys.end(), skey.str()) ==
            section->keys.end()) {
          unknown_key(skey, k, section->keys);
          continue;
        }
        apply_key(skey.str(), value);
      }
    }
  }

 private:
  static const SectionKeys* find_section(std::string_view name) {
    for (const SectionKeys& s : kSections) {
      if (s.section == name) return &s;
    }
    return nullptr;
  }

  SourcePos pos(const toml::source_region& r) const {
    return SourcePos{file_, r.begin.line, r.begin.column};
  }
  void error(const toml::node& at, std::string why) { error(at.source(), std::move(why)); }
  void error(const toml::source_region& at, std::string why) {
    errors_.emplace_back(pos(at), std::move(why));
  }
  void note(const std::string& key, const toml::node& at) { positions_[key] = pos(at.source()); }
  std::string path_of(std::string_view key) const {
    return section_.empty() ? std::string(key) : fmt::format("{}.{}", section_, key);
  }

  void unknown_key(const toml::key& key, std::string_view section, Keys allowed) {
    const std::string_view k = key.str();
    const std::string where =
        section.empty() ? "at the top level" : fmt::format("in [{}]", section);
    std::string why;
    const std::string risky = fmt::format("dangerously_{}", k);
    if (auto guess = closest(k, allowed)) {
      why = fmt::format("unknown key \"{}\" {}; did you mean \"{}\"?", k, where, *guess);
    } else if (std::find(allowed.begin(), allowed.end(), risky) != allowed.end()) {
      why = fmt::format(
          "unknown key \"{}\" {}; it is \"{}\", named so because it is a risky "
          "opt-in (policies/README.md)",
          k, where, risky);
    } else if (const std::string_view home = home_section_of(k, section); !home.empty()) {
      why = fmt::format("\"{}\" does not belong {}; it goes in [{}]", k, where, home);
    } else if (section.empty() && find_section(k) == nullptr) {
      std::array<std::string_view, kSections.size()> names{};
      std::transform(kSections.begin(), kSections.end(), names.begin(),
                     [](const SectionKeys& s) { return s.section; });
      why = fmt::format(
          "unknown key \"{}\" at the top level; write \"description\", \"extends\" or "
          "a section: {}",
          k, quoted_list(names));
    } else {
      why = fmt::format("unknown key \"{}\" {}; the keys there are {}", k, where,
                        quoted_list(allowed));
    }
    error(key.source(), std::move(why));
  }

  // The section other than `current` that has a key named `key`, or "".
  static std::string_view home_section_of(std::string_view key, std::string_view current) {
    for (const SectionKeys& s : kSections) {
      if (s.section != current && std::find(s.keys.begin(), s.keys.end(), key) != s.keys.end())
        return s.section;
    }
    return "";
  }

  // --- typed readers: each reports its own error and returns nullopt ---

  std::optional<std::string> string(const toml::node& n, std::string_view key,
                                    std::string_view example) {
    if (const auto* s = n.as_string()) return s->get();
    error(n, fmt::format("{} must be a string, like {}; found {}", key, example, type_name(n)));
    return std::nullopt;
  }

  std::optional<bool> boolean(const toml::node& n, std::string_view key) {
    if (const auto* b = n.as_boolean()) return b->get();
    error(n, fmt::format("{} must be true or false (no quotes); found {}", key, type_name(n)));
    return std::nullopt;
  }

  std::optional<uint64_t> integer(const toml::node& n, std::string_view key, int64_t min,
                                  int64_t max, std::string_view alternative) {
    const auto* i = n.as_integer();
    if (i == nullptr) {
      error(n,
            fmt::format("{} must be a whole number{}; found {}", key, alternative, type_name(n)));
      return std::nullopt;
    }
    if (i->get() < min || i->get() > max) {
      error(n, fmt::format("{} = {} is out of range; write a number from {} to {}{}", key, i->get(),
                           min, max, alternative));
      return std::nullopt;
    }
    return static_cast<uint64_t>(i->get());
  }

  template <class E, size_t N>
  std::optional<E> enumerated(const toml::node& n, std::string_view key,
                              const std::array<std::string_view, N>& table) {
    const auto* s = n.as_string();
    if (s == nullptr) {
      error(n, fmt::format("{} must be one of {} (a quoted string); found {}", key,
                           quoted_list(table), type_name(n)));
      return std::nullopt;
    }
    if (auto e = names::find<E>(s->get(), table)) return e;
    std::optional<std::string_view> guess = closest(s->get(), table);
    for (std::string_view candidate : table) {
      if (!guess && !s->get().empty() && candidate.ends_with("_" + s->get())) guess = candidate;
    }
    error(n, fmt::format("{} = \"{}\" is not allowed; {}write one of {}", key, s->get(),
                         guess ? fmt::format("did you mean \"{}\"? ", *guess) : "",
                         quoted_list(table)));
    return std::nullopt;
  }

  std::optional<std::string> path(const toml::node& n, std::string_view key) {
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

  const toml::array* list(const toml::node& n, std::string_view key, std::string_view example) {
    if (const auto* a = n.as_array()) return a;
    error(n, fmt::format("{} must be a list, like {}; found {}", key, example, type_name(n)));
    return nullptr;
  }

  // --- one key of one section ---

  void apply_key(std::string_view key, const toml::node& n) {
    const std::string k = path_of(key);
    if (section_ == "filesystem") return filesystem(key, k, n);
    if (section_ == "environment") return environment(key, k, n);
    if (section_ == "limits") return limits(key, k, n);
    if (section_ == "seccomp") return set_bool(p_.seccomp, k, n);
    if (section_ == "landlock") return set_bool(p_.landlock, k, n);
    if (section_ == "namespaces") {
      return enum_list(
          p_.dangerously_share, key, k, n, names::kSharedNamespaces, [&](const auto& s) {
            return s == "net" ? std::optional<std::string>(
                                    "the network namespace follows network.mode; write mode = "
                                    "\"dangerously_host\" in [network] to share the host's")
                              : std::nullopt;
          });
    }
    if (section_ == "network") {
      if (key == "mode") {
        if (auto m = enumerated<jail::NetworkMode>(n, k, names::kNetworkModes)) {
          p_.network.mode = *m;
          note(k, n);
        }
        return;
      }
      return set_bool(p_.network.loopback_servers, k, n);
    }
    if (section_ == "identity") return identity(key, k, n);
    if (section_ == "require") return enum_list(p_.require, key, k, n, names::kLayers, no_hint);
    if (section_ == "tools") {
      std::vector<size_t> chosen;
      for (const std::string& t : p_.disabled_tools) {
        if (auto i = names::find<size_t>(t, names::kTools)) chosen.push_back(*i);
      }
      enum_list(chosen, key, k, n, names::kTools, no_hint);
      p_.disabled_tools.clear();
      for (size_t i : chosen) p_.disabled_tools.emplace_back(names::kTools[i]);
    }
  }

  static std::optional<std::string> no_hint(std::string_view) { return std::nullopt; }

  void set_bool(bool& field, const std::string& k, const toml::node& n) {
    if (auto b = boolean(n, k)) {
      field = *b;
      note(k, n);
    }
  }

  void filesystem(std::string_view key, const std::string& k, const toml::node& n) {
    Filesystem& fs = p_.filesystem;
    if (key == "workspace") {
      if (auto w = enumerated<WorkspaceAccess>(n, k, names::kWorkspaceAccess)) {
        fs.workspace = *w;
        note(k, n);
      }
    } else if (key.starts_with("read_only")) {
      path_rules(fs.read_only, key, n);
    } else if (key.starts_with("read_write")) {
      path_rules(fs.read_write, key, n);
    } else if (key.starts_with("hidden")) {
      const std::string base = "filesystem.hidden";
      const toml::array* a = list(n, k, "[\"~/.ssh\", \"~/.aws\"]");
      if (a == nullptr) return;
      if (!key.ends_with("_add")) fs.hidden.clear();
      for (const toml::node& e : *a) {
        auto p = path(e, base);
        if (!p) continue;
        note(base + " " + *p, e);
        if (std::find(fs.hidden.begin(), fs.hidden.end(), *p) == fs.hidden.end())
          fs.hidden.push_back(*p);
      }
    } else if (key == "tmp_size" || key == "home_size") {
      if (auto size = size_value(n, k, /*allow_unlimited=*/false)) {
        (key == "tmp_size" ? fs.tmp_size : fs.home_size) = size->value_or(0);
        note(k, n);
      }
    } else if (key == "private_home") {
      set_bool(fs.private_home, k, n);
    } else if (key == "dangerously_writable_git") {
      set_bool(fs.dangerously_writable_git, k, n);
    } else if (key.starts_with("dangerously_devices")) {
      path_rules(fs.dangerously_devices, key, n, &jail::device_path_problem);
    }
  }

  // read_only / read_write / dangerously_devices (and their _add forms):
  // paths, or { path = "...", optional = true } tables. `problem` says why a
  // path cannot be in this list, or nullopt.
  void path_rules(std::vector<PathRule>& rules, std::string_view key, const toml::node& n,
                  std::optional<std::string> (*problem)(const std::string&) = nullptr) {
    const std::string base = fmt::format("filesystem.{}", key.substr(0, key.find("_add")));
    const std::string k = path_of(key);
    const toml::array* a =
        list(n, k,
             problem ? "[\"/dev/fuse\", { path = \"/dev/kvm\", optional = true }]"
                     : "[\"/usr\", { path = \"/lib64\", optional = true }]");
    if (a == nullptr) return;
    if (!key.ends_with("_add")) rules.clear();
    for (const toml::node& e : *a) {
      std::optional<PathRule> rule;
      if (const toml::table* t = e.as_table()) {
        rule = path_table(*t, base);
      } else if (e.is_string()) {
        if (auto p = path(e, base)) rule = PathRule{*p, false};
      } else {
        error(e, fmt::format("each entry of {} is a path string or {{ path = \"...\", optional = "
                             "true }}; found {}",
                             k, type_name(e)));
      }
      if (!rule) continue;
      if (auto why = problem ? problem(rule->path) : std::nullopt) {
        error(e, fmt::format("{}: {}", base, *why));
        continue;
      }
      note(base + " " + rule->path, e);
      auto same = std::find_if(rules.begin(), rules.end(),
                               [&](const PathRule& r) { return r.path == rule->path; });
      if (same == rules.end()) {
        rules.push_back(*rule);
      } else {
        same->optional = same->optional && rule->optional;  // required once = required
      }
    }
  }

  std::optional<PathRule> path_table(const toml::table& t, const std::string& base) {
    PathRule rule;
    bool ok = true, have_path = false;
    for (auto&& [key, value] : t) {
      if (key.str() == "path") {
        auto p = path(value, base + " path");
        ok = ok && p.has_value();
        if (p) rule.path = *p;
        have_path = true;
      } else if (key.str() == "optional") {
        auto b = boolean(value, base + " optional");
        ok = ok && b.has_value();
        rule.optional = b.value_or(false);
      } else {
        auto guess = closest(key.str(), kPathEntryKeys);
        error(key.source(),
              fmt::format("unknown key \"{}\" in an entry of {}; {}an entry has \"path\" and "
                          "\"optional\"",
                          key.str(), base,
                          guess ? fmt::format("did you mean \"{}\"? ", *guess) : ""));
        ok = false;
      }
    }
    if (!have_path) {
      error(t, fmt::format("an entry of {} needs a path: {{ path = \"/lib64\", optional = true }}",
                           base));
      return std::nullopt;
    }
    return ok ? std::optional<PathRule>(rule) : std::nullopt;
  }

  void environment(std::string_view key, const std::string& k, const toml::node& n) {
    Environment& env = p_.environment;
    if (key == "set") {
      const toml::table* t = n.as_table();
      if (t == nullptr) {
        error(n,
              fmt::format("environment.set must be a table, like set = {{ HOME = \"~\" }}; found "
                          "{}",
                          type_name(n)));
        return;
      }
      for (auto&& [name, value] : *t) {
        const std::string var(name.str());
        if (!is_var_name(var)) {
          error(name.source(),
                fmt::format("\"{}\" is not a variable name; use letters, digits and _", var));
          continue;
        }
        const auto* s = value.as_string();
        if (s == nullptr) {
          error(value, fmt::format("environment.set.{} must be a string: write {} = \"...\" "
                                   "(quoted); found {}",
                                   var, var, type_name(value)));
          continue;
        }
        auto expanded = expand_value(s->get(), x_);
        if (!expanded) {
          error(value, fmt::format("environment.set.{}: {}", var, expanded.error()));
          continue;
        }
        env.set[var] = *expanded;
        note("environment.set." + var, value);
      }
      return;
    }
    const toml::array* a = list(n, k, "[\"TERM\", \"LANG\", \"LC_*\"]");
    if (a == nullptr) return;
    if (key == "pass") env.pass.clear();
    for (const toml::node& e : *a) {
      auto name = string(e, "environment.pass entries", "\"TERM\" or \"LC_*\"");
      if (!name) continue;
      const std::string_view stem =
          name->ends_with('*') ? std::string_view(*name).substr(0, name->size() - 1) : *name;
      if (!is_var_name(stem) && !(name->ends_with('*') && stem.empty())) {
        error(e, fmt::format("\"{}\" is not a variable name; write a name like \"TERM\", or a "
                             "prefix like \"LC_*\"",
                             *name));
        continue;
      }
      if (stem.empty()) {
        error(e, "\"*\" would pass the whole host environment; name the variables instead");
        continue;
      }
      if (std::find(env.pass.begin(), env.pass.end(), *name) == env.pass.end())
        env.pass.push_back(*name);
    }
  }

  // A size or "unlimited"; the outer optional is empty on error, the inner
  // one for "unlimited".
  std::optional<std::optional<uint64_t>> size_value(const toml::node& n, const std::string& k,
                                                    bool allow_unlimited) {
    const std::string alternative = allow_unlimited ? " or \"unlimited\"" : "";
    if (const auto* i = n.as_integer()) {
      if (i->get() < 0) {
        error(n,
              fmt::format("{} cannot be negative; write a size like \"512MiB\"{}", k, alternative));
        return std::nullopt;
      }
      return std::optional<uint64_t>(static_cast<uint64_t>(i->get()));
    }
    const auto* s = n.as_string();
    if (s == nullptr) {
      error(n, fmt::format("{} must be a size like \"512MiB\"{}; found {}", k, alternative,
                           type_name(n)));
      return std::nullopt;
    }
    if (allow_unlimited && s->get() == kUnlimited) return std::optional<uint64_t>();
    auto bytes = parse_size(s->get());
    if (!bytes) {
      error(n, fmt::format("{}: {}{}", k, bytes.error(),
                           allow_unlimited ? ", or \"unlimited\" for no limit" : ""));
      return std::nullopt;
    }
    return std::optional<uint64_t>(*bytes);
  }

  std::optional<std::optional<std::chrono::milliseconds>> duration_value(const toml::node& n,
                                                                         const std::string& k) {
    const auto* s = n.as_string();
    if (s == nullptr) {
      error(n,
            fmt::format("{} must be a duration like \"30m\" (quoted), or \"unlimited\"; found {}",
                        k, type_name(n)));
      return std::nullopt;
    }
    if (s->get() == kUnlimited) return std::optional<std::chrono::milliseconds>();
    auto d = parse_duration(s->get());
    if (!d) {
      error(n, fmt::format("{}: {}, or \"unlimited\" for no limit", k, d.error()));
      return std::nullopt;
    }
    if (d->count() == 0) {
      error(n, fmt::format("{} must be longer than 0; write \"unlimited\" for no limit", k));
      return std::nullopt;
    }
    return std::optional<std::chrono::milliseconds>(*d);
  }

  std::optional<std::optional<uint64_t>> count_value(const toml::node& n, const std::string& k,
                                                     int64_t min) {
    if (const auto* s = n.as_string(); s != nullptr && s->get() == kUnlimited)
      return std::optional<uint64_t>();
    auto v = integer(n, k, min, std::numeric_limits<int32_t>::max(), " or \"unlimited\"");
    if (!v) return std::nullopt;
    return std::optional<uint64_t>(*v);
  }

  void limits(std::string_view key, const std::string& k, const toml::node& n) {
    jail::Limits& l = p_.limits;
    if (key == "memory" || key == "file_size") {
      auto v = size_value(n, k, /*allow_unlimited=*/true);
      if (!v) return;
      if (key == "memory" && *v && **v < (uint64_t{1} << 20)) {
        error(n,
              "limits.memory below 1MiB leaves no room for any program; write at least \"1MiB\"");
        return;
      }
      if (*v && **v == 0) {
        error(n, fmt::format("{} must be more than 0; write \"unlimited\" for no limit", k));
        return;
      }
      (key == "memory" ? l.memory_bytes : l.file_size_bytes) = *v;
    } else if (key == "pids" || key == "open_files") {
      // open_files: stdin, stdout and stderr need three.
      auto v = count_value(n, k, key == "pids" ? 1 : 3);
      if (!v) return;
      (key == "pids" ? l.pids : l.open_files) = *v;
    } else if (key == "cpu_time") {
      auto v = duration_value(n, k);
      if (!v) return;
      if (*v && (**v).count() % 1000 != 0) {
        error(n,
              "limits.cpu_time counts whole seconds (RLIMIT_CPU); write it as \"90s\" or \"2m\"");
        return;
      }
      l.cpu_seconds =
          *v ? std::optional<uint64_t>(static_cast<uint64_t>((**v).count() / 1000)) : std::nullopt;
    } else if (key == "wall_time") {
      auto v = duration_value(n, k);
      if (!v) return;
      l.wall_time = *v;
    }
    note(k, n);
  }

  void identity(std::string_view key, const std::string& k, const toml::node& n) {
    Identity& id = p_.identity;
    if (key == "as_root") {
      // The old default's spelling, refused rather than read either way: its
      // meaning (host root) became a dangerous opt-in, and the new default
      // is a different jail.
      if (const auto* s = n.as_string(); s != nullptr && s->get() == "root") {
        error(n, fmt::format(
                     "{} = \"root\" was renamed: write \"mapped\" (the default: uid 0 in the "
                     "jail is the unprivileged identity.uid on the host, and the workspace keeps "
                     "its owner through an idmapped mount) or, for the old behaviour where the "
                     "jail's uid 0 is host root, \"dangerously_host_root\"",
                     k));
        return;
      }
      if (auto r = enumerated<RootIdentity>(n, k, names::kRootIdentities)) {
        id.as_root = *r;
        note(k, n);
      }
    } else if (key == "uid" || key == "gid") {
      // 2^32 - 1 is (uid_t)-1, "no id" to the kernel.
      auto v = integer(n, k, 0, int64_t{0xfffffffe}, "");
      if (!v) return;
      if (key == "uid")
        id.uid = static_cast<uid_t>(*v);
      else
        id.gid = static_cast<gid_t>(*v);
      note(k, n);
    } else if (key == "dangerously_unmask_root_secrets") {
      set_bool(id.dangerously_unmask_root_secrets, k, n);
    }
  }

  // A list of enum names (key, or key_add to append). `hint` may explain a
  // value that is refused on purpose.
  template <class E, size_t N, class Hint>
  void enum_list(std::vector<E>& out, std::string_view key, const std::string& k,
                 const toml::node& n, const std::array<std::string_view, N>& table, Hint hint) {
    const toml::array* a = list(n, k, fmt::format("[\"{}\"]", table[0]));
    if (a == nullptr) return;
    if (!key.ends_with("_add")) out.clear();
    for (const toml::node& e : *a) {
      if (const auto* s = e.as_string()) {
        if (auto why = hint(s->get())) {
          error(e, *why);
          continue;
        }
      }
      if (auto v = enumerated<E>(e, k + " entries", table)) {
        if (std::find(out.begin(), out.end(), *v) == out.end()) out.push_back(*v);
      }
    }
    note(path_of(key.substr(0, key.find("_add"))), n);
  }

  const std::string& file_;
  const Expansion& x_;
  Policy& p_;
  Positions& positions_;
  Found& errors_;
  std::string_view section_;
};

}  // namespace

std::string SourcePos::to_string() const {
  return fmt::format("{}:{}:{}", file, line, column);
}

Error policy_error(const SourcePos& pos, std::string why) {
  return Error{"invalid policy", pos.to_string(), std::move(why), 0};
}

void apply_file(const toml::table& root, const std::string& file, const Expansion& x,
                Policy& policy, Positions& positions, std::vector<Error>& errors) {
  Applier::Found found;
  Applier(file, x, policy, positions, found).run(root);
  // toml++ hands keys over sorted by name; the user reads the file top down.
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first.line, a.first.column) < std::pair(b.first.line, b.first.column);
  });
  for (auto& [pos, why] : found) errors.push_back(policy_error(pos, std::move(why)));
}

}  // namespace brig::policy
