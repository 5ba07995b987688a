#include "server/policy/loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "server/policy/apply.h"
#include "server/policy/builtin.h"
#include "server/policy/key_depth.h"
#include "server/policy/llm_routes.h"
#include "server/policy/names.h"
#include "server/policy/suggest.h"
#include "server/static_libs/toml.h"

namespace brig::policy {
namespace {

// Deeper than any sensible layering; a longer chain is almost surely a mistake.
constexpr size_t kMaxChain = 16;

// `path` made absolute against the current directory and normalized where
// that is lexically safe (no ".."), as a policy file is named in messages.
std::string absolute_path(const std::string& path) {
  std::string abs = path;
  if (!abs.starts_with('/')) {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) == nullptr) return abs;
    abs = fmt::format("{}/{}", cwd, abs);
  }
  auto normal = normalize_path(abs);
  return normal ? *normal : abs;
}

Result<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::unexpected(sys_error("read the policy", path, errno));
  std::string text;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return std::unexpected(sys_error("read the policy", path, err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

std::string builtin_names() {
  std::vector<std::string_view> names;
  for (const BuiltinPolicy& b : builtin_policies()) names.push_back(b.name);
  return quoted_list(names);
}

// The parsed files of a chain, the loaded file first.
struct ChainLink {
  PolicySource source;
  toml::table table;
};

// Parses `source`; a syntax error becomes one Error at its position.
Result<toml::table> parse(const PolicySource& source) {
  if (auto deep = find_overlong_key(source.text)) {
    return std::unexpected(policy_error(
        SourcePos{source.display, deep->line, deep->column},
        fmt::format("a dotted key or table name of more than {} parts; brig's keys have at most "
                    "three (a TOML parser nests a table per part, and brig refuses a nesting "
                    "deep enough to exhaust its stack)",
                    kMaxKeyParts)));
  }
  try {
    return toml::parse(source.text, source.display);
  } catch (const toml::parse_error& e) {
    return std::unexpected(
        policy_error(SourcePos{source.display, e.source().begin.line, e.source().begin.column},
                     fmt::format("TOML syntax: {}", e.description())));
  }
}

SourcePos pos_of(const PolicySource& s, const toml::node& n) {
  return SourcePos{s.display, n.source().begin.line, n.source().begin.column};
}

// The source `extends` (the node `node` in `from`) points at.
Result<PolicySource> follow_extends(const PolicySource& from, const toml::node& node,
                                    const Expansion& x) {
  const auto* s = node.as_string();
  if (s == nullptr) {
    return std::unexpected(policy_error(
        pos_of(from, node), fmt::format("extends must be a string: a shipped policy ({}) or a "
                                        "file like \"./base.toml\"",
                                        builtin_names())));
  }
  std::string ref = s->get();
  if (names_a_file(ref)) {
    if (from.builtin) {
      return std::unexpected(
          policy_error(pos_of(from, node), "a shipped policy can only extend another shipped one"));
    }
    auto expanded = expand(ref, x);
    if (!expanded) return std::unexpected(policy_error(pos_of(from, node), expanded.error()));
    ref = *expanded;
  }
  auto next = open_policy(ref, from.dir);
  if (!next) {
    Error e = std::move(next.error());
    return std::unexpected(policy_error(pos_of(from, node), e.to_string()));
  }
  return next;
}

// Checks that span settings made in different files (or lists), once the
// whole chain is applied. Positions name where the later setting was made.
void check_consistency(const Policy& p, const Positions& positions, const std::string& leaf,
                       std::vector<Error>& errors) {
  auto at = [&](const std::string& key) {
    auto it = positions.find(key);
    return it != positions.end() ? it->second : SourcePos{leaf, 1, 1};
  };
  const Filesystem& fs = p.filesystem;
  for (const PathRule& rw : fs.read_write) {
    for (const PathRule& ro : fs.read_only) {
      if (rw.path == ro.path) {
        errors.push_back(policy_error(
            at("filesystem.read_write " + rw.path),
            fmt::format("\"{}\" is in both filesystem.read_only and filesystem.read_write; keep "
                        "it in one of them",
                        rw.path)));
      }
    }
  }
  for (const auto* rules : {&fs.read_only, &fs.read_write}) {
    const char* list = rules == &fs.read_only ? "read_only" : "read_write";
    for (const PathRule& r : *rules) {
      for (const std::string& h : fs.hidden) {
        if (!is_within(r.path, h)) continue;
        errors.push_back(policy_error(
            at(fmt::format("filesystem.{} {}", list, r.path)),
            fmt::format("\"{}\" in filesystem.{} lies in the hidden path \"{}\"; remove it from "
                        "one of filesystem.{} and filesystem.hidden",
                        r.path, list, h, list)));
      }
    }
  }
  auto requires_layer = [&](jail::Layer l) {
    return std::find(p.require.begin(), p.require.end(), l) != p.require.end();
  };
  if (!p.seccomp && requires_layer(jail::Layer::seccomp)) {
    errors.push_back(policy_error(
        at("seccomp.enabled"),
        "seccomp.enabled = false, but require.layers lists \"seccomp\"; remove it from "
        "require.layers (or enable seccomp)"));
  }
  if (!p.landlock && requires_layer(jail::Layer::landlock)) {
    errors.push_back(policy_error(
        at("landlock.enabled"),
        "landlock.enabled = false, but require.layers lists \"landlock\"; remove it from "
        "require.layers (or enable landlock)"));
  }
  // uid 0 is refused for both unprivileged modes (the jail would be host
  // root); gid 0 for mapped, whose promise is that nothing of root's is the
  // jail's (user keeps what it always allowed).
  const bool mapped = p.identity.as_root == RootIdentity::mapped;
  if (p.identity.as_root != RootIdentity::dangerously_host_root &&
      (p.identity.uid == 0 || (mapped && p.identity.gid == 0))) {
    const char* key = p.identity.uid == 0 ? "uid" : "gid";
    errors.push_back(policy_error(
        at(fmt::format("identity.{}", key)),
        fmt::format("identity.{} = 0 is root's; write an unprivileged id (65534 is nobody), or "
                    "as_root = \"dangerously_host_root\" to make the jail's root host root",
                    key)));
  }
  for (std::string& why : llm_route_conflicts(p))
    errors.push_back(policy_error(at("llm.routes"), std::move(why)));
  const bool shares_mount = std::find(p.dangerously_share.begin(), p.dangerously_share.end(),
                                      SharedNamespace::mount) != p.dangerously_share.end();
  if (shares_mount && p.filesystem.private_home) {
    errors.push_back(policy_error(
        at("namespaces.dangerously_share"),
        "sharing the mount namespace leaves no private home; also write private_home = false in "
        "[filesystem]"));
  }
}

// allow, deny and hosts hold only in proxy and filtered mode; elsewhere a rule would be
// believed and not hold. Rules inherited from a file before the one that
// chose the mode are dropped (that file knowingly overrode its base, and
// `hosts` could not be cleared otherwise); rules written in that file or
// after it are an error. `files`: the chain's display names, leaf first.
void settle_network_rules(Policy& p, const Positions& positions,
                          const std::vector<std::string>& files, std::vector<Error>& errors) {
  if (p.network.mode == NetworkMode::proxy || p.network.mode == NetworkMode::filtered) return;
  // 0 is the leaf, the last file applied; files.size() the built-in defaults.
  auto rank = [&](const std::string& key) {
    auto it = positions.find(key);
    if (it == positions.end()) return files.size();
    return static_cast<size_t>(std::find(files.begin(), files.end(), it->second.file) -
                               files.begin());
  };
  const auto mode_at = positions.find("network.mode");
  const std::string mode(names::of(p.network.mode, names::kNetworkModes));
  const std::string from =
      mode_at == positions.end() ? "" : fmt::format(" (set at {})", mode_at->second.to_string());
  const char* consequence = p.network.mode == NetworkMode::none
                                ? "nothing outside the jail is reachable, whatever the rules say"
                                : "the jail has the host's whole network, which no rule limits";
  NetRules& rules = p.network.rules;
  auto settle = [&](std::string_view key, bool empty, auto clear) {
    if (empty) return;
    const std::string path = fmt::format("network.{}", key);
    if (rank("network.mode") < rank(path)) {
      clear();
      return;
    }
    auto at = positions.find(path);
    errors.push_back(policy_error(
        at != positions.end() ? at->second : SourcePos{files.front(), 1, 1},
        fmt::format("{} takes effect only with mode = \"proxy\" or \"filtered\", and mode is "
                    "\"{}\"{}: {}; write mode = \"proxy\" in [network], or remove {}",
                    path, mode, from, consequence, path)));
  };
  settle("allow", rules.allow.empty(), [&] { rules.allow.clear(); });
  settle("deny", rules.deny.empty(), [&] { rules.deny.clear(); });
  settle("hosts", rules.hosts.empty(), [&] { rules.hosts.clear(); });
}

}  // namespace

bool names_a_file(std::string_view ref) {
  return ref.find('/') != std::string_view::npos || ref.ends_with(".toml");
}

Result<PolicySource> open_policy(std::string_view ref, std::string_view dir) {
  if (!names_a_file(ref)) {
    if (const BuiltinPolicy* b = find_builtin(ref)) {
      return PolicySource{fmt::format("<built-in>/{}.toml", b->name), std::string(b->text), "",
                          fmt::format("builtin:{}", b->name), true};
    }
    std::vector<std::string_view> names;
    for (const BuiltinPolicy& b : builtin_policies()) names.push_back(b.name);
    const auto guess = closest(ref, names);
    return std::unexpected(Error{
        "find the policy", std::string(ref),
        fmt::format("no shipped policy is called \"{}\"{}; the shipped ones are {}, and a file "
                    "is named with a '/' or a .toml suffix (\"./{}.toml\")",
                    ref, guess ? fmt::format(" (did you mean \"{}\"?)", *guess) : "",
                    builtin_names(), ref)});
  }
  std::string path(ref);
  if (!path.starts_with('/') && !dir.empty()) path = fmt::format("{}/{}", dir, path);
  // "/etc/brig/./base.toml" reads badly in messages; ".." stays (it may cross a symlink).
  if (auto normal = normalize_path(path); normal && path.starts_with('/')) path = *normal;
  PolicySource source;
  source.display = path;
  source.text = BRIG_TRY(read_file(path));
  char real[PATH_MAX];
  source.identity = ::realpath(path.c_str(), real) != nullptr ? std::string(real) : path;
  const size_t slash = source.identity.rfind('/');
  source.dir = slash == 0 ? "/" : source.identity.substr(0, slash);
  return source;
}

LoadResult load_policy(const PolicySource& source, const Expansion& x) {
  std::vector<ChainLink> chain;
  PolicySource current = source;
  for (;;) {
    auto table = parse(current);
    if (!table) return std::unexpected(std::vector<Error>{std::move(table.error())});
    chain.push_back(ChainLink{std::move(current), std::move(*table)});
    const ChainLink& link = chain.back();
    const toml::node* extends = link.table.get("extends");
    if (extends == nullptr) break;
    auto next = follow_extends(link.source, *extends, x);
    if (!next) return std::unexpected(std::vector<Error>{std::move(next.error())});
    const auto seen = std::find_if(chain.begin(), chain.end(), [&](const ChainLink& l) {
      return l.source.identity == next->identity;
    });
    if (seen != chain.end() || chain.size() == kMaxChain) {
      std::string cycle;
      for (const ChainLink& l : chain) cycle += l.source.display + " -> ";
      cycle += next->display;
      return std::unexpected(std::vector<Error>{policy_error(
          pos_of(link.source, *extends),
          seen != chain.end()
              ? fmt::format("extends makes a cycle ({}); remove one of these extends", cycle)
              : fmt::format("extends goes more than {} files deep ({})", kMaxChain, cycle))});
    }
    current = std::move(*next);
  }

  LoadedPolicy loaded;
  Positions positions;
  std::vector<Error> errors;
  // The most basic policy first: each file then overrides what it extends.
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    apply_file(it->table, it->source.display, x, loaded.policy, positions, errors);
  }
  check_consistency(loaded.policy, positions, chain.front().source.display, errors);
  std::vector<std::string> displays;
  for (const ChainLink& l : chain) displays.push_back(l.source.display);
  settle_network_rules(loaded.policy, positions, displays, errors);
  if (!errors.empty()) return std::unexpected(std::move(errors));
  for (const ChainLink& l : chain) {
    loaded.chain.push_back(l.source.display);
    if (l.source.builtin) continue;
    loaded.files.push_back(absolute_path(l.source.display));
    if (l.source.identity != loaded.files.back()) loaded.files.push_back(l.source.identity);
  }
  return loaded;
}

LoadResult load_policy(std::string_view ref, const Expansion& x) {
  auto source = open_policy(ref);
  if (!source) return std::unexpected(std::vector<Error>{std::move(source.error())});
  return load_policy(*source, x);
}

}  // namespace brig::policy
