#include "server/policy/to_jail_spec.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <fmt/format.h>

#include "jail/base/path.h"
#include "server/policy/expand.h"
#include "server/policy/net_filter.h"

namespace brig::policy {
namespace {

using jail::Mount;

// Path order with '/' lowest, so a tree is listed depth-first: "/a", "/a/b",
// "/a-b". Any order with parents first would do; this one reads well.
bool path_less(const std::string& a, const std::string& b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return (x == '/' ? '\0' : x) < (y == '/' ? '\0' : y);
  });
}

Mount mount_of(Mount::Kind kind, const std::string& target) {
  Mount m;
  m.kind = kind;
  m.target = target;
  return m;
}

Mount bind_mount(const std::string& path, bool writable, bool optional) {
  Mount m = mount_of(Mount::Kind::bind, path);
  m.source = path;
  m.writable = writable;
  m.optional = optional;
  return m;
}

Mount tmpfs(const std::string& path, uint64_t size, mode_t mode) {
  Mount m = mount_of(Mount::Kind::tmpfs, path);
  m.writable = true;
  m.size_bytes = size;
  m.mode = mode;
  return m;
}

bool shares(const Policy& p, SharedNamespace ns) {
  return std::find(p.dangerously_share.begin(), p.dangerously_share.end(), ns) !=
         p.dangerously_share.end();
}

jail::Namespaces namespaces_for(const Policy& p) {
  jail::Namespaces ns;
  ns.user = !shares(p, SharedNamespace::user);
  ns.mount = !shares(p, SharedNamespace::mount);
  ns.pid = !shares(p, SharedNamespace::pid);
  ns.ipc = !shares(p, SharedNamespace::ipc);
  ns.uts = !shares(p, SharedNamespace::uts);
  ns.cgroup = !shares(p, SharedNamespace::cgroup);
  ns.net = p.network.mode != NetworkMode::dangerously_host;
  return ns;
}

// Whether the jail's uid 0 is an unprivileged host id, with the workspace
// shown through an idmapped mount (brig as root, as_root = "mapped").
bool maps_root(const Policy& p, const Context& ctx) {
  return ctx.uid == 0 && p.identity.as_root == RootIdentity::mapped;
}

jail::Identity identity_for(const Policy& p, const Context& ctx) {
  // A caller other than root runs as itself: unprivileged, the only mapping
  // the kernel allows is brig's own ids; a root brig serving another user
  // maps that user's.
  if (ctx.uid != 0 || p.identity.as_root == RootIdentity::dangerously_host_root) {
    return jail::Identity{ctx.uid, ctx.gid, ctx.uid, ctx.gid};
  }
  if (p.identity.as_root == RootIdentity::mapped) {
    // Only the jail's root -> identity.uid/gid: host root is in no map, so
    // no process of the jail, its init included, is ever host root.
    return jail::Identity{0, 0, p.identity.uid, p.identity.gid, /*map_launcher=*/false};
  }
  return jail::Identity{p.identity.uid, p.identity.gid, p.identity.uid, p.identity.gid};
}

bool is_hidden(const Policy& p, const std::string& path) {
  return std::any_of(p.filesystem.hidden.begin(), p.filesystem.hidden.end(),
                     [&](const std::string& h) { return is_within(path, h); });
}

// The workspace's .git as git needs it (jail/steps/git_state.h): git's
// state writable, what it reads as configuration or as a pointer read-only,
// new top-level names private to the jail. Planned for every jail, whatever
// the workspace held when brig started; the mount planner looks at .git
// itself only (a directory, a file, nothing or a symlink), never inside it:
// a linked worktree's repository is bound only when the policy names it.
// The private layer may hold as much as /tmp.
void add_git_binds(const Policy& p, const Context& ctx, std::vector<Mount>& out) {
  if (p.filesystem.workspace != WorkspaceAccess::read_write ||
      p.filesystem.dangerously_writable_git)
    return;
  Mount git = mount_of(Mount::Kind::git, ctx.workspace + "/.git");
  git.optional = true;
  git.size_bytes = p.filesystem.tmp_size;
  out.push_back(std::move(git));
}

// Drops every mount but the first at each target (the caller lists them by
// precedence) and every bind inside a hidden path.
std::vector<Mount> dedupe(const Policy& p, std::vector<Mount> in) {
  std::vector<Mount> out;
  for (Mount& m : in) {
    if ((m.kind == Mount::Kind::bind || m.kind == Mount::Kind::git) && is_hidden(p, m.target))
      continue;
    const bool taken =
        std::any_of(out.begin(), out.end(), [&](const Mount& o) { return o.target == m.target; });
    if (!taken) out.push_back(std::move(m));
  }
  return out;
}

// A mask for each hidden host path; the jail's planner puts it wherever a
// bind shows that file (at its own path or through a symlinked one) and
// skips it where nothing does. A path that is a mount target itself is
// replaced already (a bind there was dropped, a tmpfs is private).
void add_masks(const std::vector<std::string>& paths, std::vector<Mount>& mounts) {
  std::vector<Mount> masks;
  for (const std::string& path : paths) {
    const auto same = [&](const Mount& m) { return m.target == path; };
    if (std::any_of(mounts.begin(), mounts.end(), same) ||
        std::any_of(masks.begin(), masks.end(), same))
      continue;
    Mount m = mount_of(Mount::Kind::mask, path);
    m.optional = true;
    masks.push_back(std::move(m));
  }
  mounts.insert(mounts.end(), masks.begin(), masks.end());
}

void add_unique(std::vector<std::string>& list, const std::string& path) {
  if (std::find(list.begin(), list.end(), path) == list.end()) list.push_back(path);
}

// Landlock grants matching the mounts: the paths are the jail's own, so a
// rule can only grant what the mounts already expose, with writes exactly
// where the mounts are writable.
jail::LandlockRules landlock_for(const Policy& p, const Context& ctx,
                                 const std::vector<Mount>& mounts, bool private_mounts) {
  jail::LandlockRules rules;
  rules.enabled = p.landlock;
  if (private_mounts) {
    for (const Mount& m : mounts) {
      switch (m.kind) {
        case Mount::Kind::bind:
          add_unique(m.writable ? rules.read_write : rules.read_only, m.target);
          break;
        case Mount::Kind::tmpfs:
        case Mount::Kind::dev:
          add_unique(rules.read_write, m.target);
          break;
        case Mount::Kind::proc:
        case Mount::Kind::file:
          add_unique(rules.read_only, m.target);
          break;
        case Mount::Kind::git:  // inside the workspace, whose rule covers it
        case Mount::Kind::mask:
          break;
      }
    }
    // The root is brig's own tmpfs, whose directories hold only the mount
    // points above: listing them shows nothing the jail cannot reach, and
    // without it `ls /` or `find /` fail with EACCES.
    add_unique(rules.list_only, "/");
  } else {
    // The host's own tree: Landlock is the only filesystem boundary.
    for (const PathRule& r : p.filesystem.read_only) add_unique(rules.read_only, r.path);
    for (const PathRule& r : p.filesystem.read_write) add_unique(rules.read_write, r.path);
    add_unique(
        p.filesystem.workspace == WorkspaceAccess::read_write ? rules.read_write : rules.read_only,
        ctx.workspace);
    add_unique(rules.read_write, "/tmp");
    add_unique(rules.read_write, "/dev");
    add_unique(rules.read_only, "/proc");
  }
  // In its own network namespace the jail has only loopback, which is the
  // boundary; loopback_servers = false adds Landlock's TCP rule on top (with
  // empty port lists: no bind or connect at all, even there), except for
  // connecting to the proxy and to DNS over TCP, proxy's only way out.
  // A filtered jail also connects directly to the ports its rules allow
  // (Landlock's rule has ports, not addresses: the nftables rules hold the
  // addresses).
  rules.restrict_tcp =
      p.network.mode != NetworkMode::dangerously_host && !p.network.loopback_servers;
  if (rules.restrict_tcp &&
      (p.network.mode == NetworkMode::proxy || p.network.mode == NetworkMode::filtered))
    rules.connect_tcp = {kProxyPort, kDnsPort};
  if (rules.restrict_tcp && p.network.mode == NetworkMode::filtered) {
    for (const jail::NetFilter::Entry& e : net_filter(p.network.rules).allow)
      for (std::uint32_t port = e.first_port; port <= e.last_port; ++port)
        if (std::find(rules.connect_tcp.begin(), rules.connect_tcp.end(), port) ==
            rules.connect_tcp.end())
          rules.connect_tcp.push_back(static_cast<std::uint16_t>(port));
  }
  // The LLM proxy's listener, in any mode with routes (the loader refuses
  // them with dangerously_host).
  if (rules.restrict_tcp && !p.llm.routes.empty()) rules.connect_tcp.push_back(kLlmPort);
  return rules;
}

// The jail's /etc/resolv.conf in proxy mode. Where no bind shows the host's
// (a policy without /etc), glibc's default server is 127.0.0.1 anyway.
constexpr const char* kStubResolvConf =
    "# brig: the jail's DNS stub, which answers the names network.allow names\n"
    "nameserver 127.0.0.1\n";

// Whether `path` can stand unquoted in ssh's ProxyCommand inside
// GIT_SSH_COMMAND, which a shell splits: the one form needing no escaping.
bool plain_program_path(const std::string& path) {
  return is_normal_absolute(path) && std::all_of(path.begin(), path.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' ||
                  c == '-' || c == '+';
         });
}

// The program GIT_SSH_COMMAND names, when the jail can run it: bound, and
// not inside a path the policy hides.
bool connect_program_usable(const Policy& p, const Context& ctx) {
  return p.network.mode == NetworkMode::proxy && plain_program_path(ctx.connect_program) &&
         !is_hidden(p, ctx.connect_program);
}

// Proxy and filtered mode: the listeners, and resolv.conf naming the stub,
// in the jail's own network namespace and over the host's file
// (landlock_for lets the command connect to them); brig's program for
// `brig connect`.
void add_egress(const Policy& p, const Context& ctx, jail::JailSpec& spec) {
  spec.listeners = egress_listeners();
  if (spec.namespaces.mount && connect_program_usable(p, ctx)) {
    // Last, like brig-worker's: every tree it may sit in is mounted before
    // it, and read-only even inside a writable workspace. Optional: where a
    // jail planted a symlink on its path (brig inside a writable tree), the
    // planner skips it instead of failing every later jail, and git over
    // ssh fails alone.
    Mount self = bind_mount(ctx.connect_program, false, true);
    spec.mounts.push_back(std::move(self));
    if (spec.landlock.enabled) add_unique(spec.landlock.read_only, ctx.connect_program);
  }
  const bool taken = std::any_of(spec.mounts.begin(), spec.mounts.end(),
                                 [](const Mount& m) { return m.target == "/etc/resolv.conf"; });
  if (spec.namespaces.mount && !taken) {
    Mount resolv = mount_of(Mount::Kind::file, "/etc/resolv.conf");
    resolv.content = kStubResolvConf;
    resolv.optional = true;
    spec.mounts.push_back(std::move(resolv));
  }
}

}  // namespace

std::vector<jail::Listener> egress_listeners() {
  using P = jail::Listener::Protocol;
  return {{P::tcp, kProxyPort}, {P::udp, kDnsPort}, {P::tcp, kDnsPort}};
}

jail::Listener llm_listener() {
  return {jail::Listener::Protocol::tcp, kLlmPort};
}

std::vector<std::pair<std::string, std::string>> proxy_environment() {
  const std::string url = fmt::format("http://127.0.0.1:{}", kProxyPort);
  const std::string local = "localhost,127.0.0.1";
  return {
      {"ALL_PROXY", url},
      {"CARGO_HTTP_PROXY", url},
      {"HTTPS_PROXY", url},
      {"HTTP_PROXY", url},
      {"NODE_USE_ENV_PROXY", "1"},  // Node's fetch ignores the others without it
      {"NO_PROXY", local},
      {"PIP_PROXY", url},
      {"YARN_HTTPS_PROXY", url},
      {"YARN_HTTP_PROXY", url},
      {"all_proxy", url},
      {"http_proxy", url},
      {"https_proxy", url},
      {"no_proxy", local},
      {"npm_config_https_proxy", url},
      {"npm_config_noproxy", local},
      {"npm_config_proxy", url},
  };
}

Result<jail::JailSpec> to_jail_spec(const Policy& p, const Context& ctx) {
  if (!is_normal_absolute(ctx.workspace) || ctx.workspace == "/") {
    return std::unexpected(Error{"plan the jail", ctx.workspace,
                                 "the workspace must be an absolute directory other than /"});
  }
  for (const std::string& h : p.filesystem.hidden) {
    if (is_within(ctx.workspace, h)) {
      return std::unexpected(Error{
          "plan the jail", ctx.workspace,
          fmt::format("the workspace lies in \"{}\", which the policy hides (filesystem.hidden); "
                      "choose another workspace or a policy that does not hide it",
                      h)});
    }
  }
  for (const auto* rules : {&p.filesystem.read_only, &p.filesystem.read_write}) {
    for (const PathRule& r : *rules) {
      if (is_within(r.path, "/proc") || is_within(r.path, "/dev")) {
        return std::unexpected(
            Error{"plan the jail", r.path,
                  "/proc and /dev are the jail's own (its pid namespace's /proc, a minimal /dev); "
                  "remove this path from the policy (a device goes in "
                  "filesystem.dangerously_devices)"});
      }
    }
  }

  jail::JailSpec spec;
  spec.namespaces = namespaces_for(p);
  spec.identity = identity_for(p, ctx);
  // Both none and proxy are a namespace of the jail's own with loopback
  // only: what proxy adds lives on that loopback.
  spec.network = p.network.mode == NetworkMode::dangerously_host
                     ? jail::NetworkMode::dangerously_host
                 : p.network.mode == NetworkMode::filtered ? jail::NetworkMode::filtered
                                                           : jail::NetworkMode::none;
  spec.limits = p.limits;
  spec.seccomp.enabled = p.seccomp;
  spec.required = p.require;
  if (p.network.mode == NetworkMode::filtered) {
    if (!is_normal_absolute(ctx.netfilter_program))
      return std::unexpected(Error{"plan the jail", "network.mode = \"filtered\"",
                                   "brig-netfilter, the program that loads the host's rules for "
                                   "filtered jails, was not found beside brig; reinstall brig"});
    spec.filter = net_filter(p.network.rules);
    spec.filter.program = ctx.netfilter_program;
    // The rules live in the jail's own network namespace: never the tier
    // without one.
    if (std::find(spec.required.begin(), spec.required.end(), jail::Layer::namespaces) ==
        spec.required.end())
      spec.required.push_back(jail::Layer::namespaces);
  }

  if (spec.namespaces.mount) {
    // Listed by precedence: at one target the first wins (the workspace over
    // a policy bind at the same path, an explicit bind over a private tmpfs).
    std::vector<Mount> m;
    m.push_back(
        bind_mount(ctx.workspace, p.filesystem.workspace == WorkspaceAccess::read_write, false));
    // Mapped, the workspace keeps its owner: its files appear owned by the
    // jail's root and what the jail creates is its owner's on disk (binds
    // inside it, .git, are made from the jail's side, with the same owners).
    m.back().keep_owner = maps_root(p, ctx);
    add_git_binds(p, ctx, m);
    for (const PathRule& r : p.filesystem.read_write)
      m.push_back(bind_mount(r.path, true, r.optional));
    for (const PathRule& r : p.filesystem.read_only)
      m.push_back(bind_mount(r.path, false, r.optional));
    if (spec.namespaces.pid) m.push_back(mount_of(Mount::Kind::proc, "/proc"));
    Mount dev = mount_of(Mount::Kind::dev, "/dev");
    dev.size_bytes =
        p.filesystem.tmp_size;  // /dev/shm: as much as /tmp, or it would be a way around it
    for (const PathRule& r : p.filesystem.dangerously_devices)
      dev.devices.push_back(jail::Device{r.path, r.optional});
    m.push_back(std::move(dev));
    m.push_back(tmpfs("/tmp", p.filesystem.tmp_size, 01777));
    if (p.filesystem.private_home && is_normal_absolute(ctx.home) && ctx.home != "/") {
      m.push_back(tmpfs(ctx.home, p.filesystem.home_size, 0700));
    }
    spec.mounts = dedupe(p, std::move(m));

    std::vector<std::string> hide = p.filesystem.hidden;
    if (spec.identity.outside_uid == 0 && !p.identity.dangerously_unmask_root_secrets) {
      hide.insert(hide.end(), std::begin(kRootSecrets), std::end(kRootSecrets));
    }
    add_masks(hide, spec.mounts);
    std::stable_sort(spec.mounts.begin(), spec.mounts.end(),
                     [](const Mount& a, const Mount& b) { return path_less(a.target, b.target); });
  }
  spec.landlock = landlock_for(p, ctx, spec.mounts, spec.namespaces.mount);
  if (p.network.mode == NetworkMode::proxy || p.network.mode == NetworkMode::filtered)
    add_egress(p, ctx, spec);
  // Last, after the egress ones (to_jail_spec.h, llm_listener): the routes are the
  // opt-in, whatever the mode.
  if (!p.llm.routes.empty() && p.network.mode != NetworkMode::dangerously_host)
    spec.listeners.push_back(llm_listener());
  return spec;
}

std::vector<std::string> jail_environment(const Policy& p, const Context& ctx) {
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : ctx.env) {
    for (const std::string& pass : p.environment.pass) {
      const bool prefix = pass.ends_with('*');
      if (prefix ? std::string_view(name).starts_with(
                       std::string_view(pass).substr(0, pass.size() - 1))
                 : name == pass) {
        env[name] = value;
        break;
      }
    }
  }
  if (p.network.mode == NetworkMode::proxy || p.network.mode == NetworkMode::filtered) {
    for (auto& [name, value] : proxy_environment()) env[name] = std::move(value);
    // ssh has no HTTP proxy of its own: git over ssh asks brig's program to
    // CONNECT for it.
    if (connect_program_usable(p, ctx))
      env["GIT_SSH_COMMAND"] =
          fmt::format("ssh -o ProxyCommand='{} connect %h %p'", ctx.connect_program);
  }
  for (const auto& [name, value] : p.environment.set) env[name] = value;
  // git's housekeeping writes objects/info (commit-graph, packs) and info/
  // (refs), which the git layer keeps read-only for the pointers beside
  // them (alternates): `git gc` would fail. The layer takes back only loose
  // objects it can check, and only an index it can check
  // (jail/steps/git_write_back.cc): fetched objects stay loose, no automatic
  // gc packs them, and no split index, untracked cache or fsmonitor data.
  // Passed as git's own configuration from the environment, unless the
  // policy sets some itself.
  if (p.filesystem.workspace == WorkspaceAccess::read_write &&
      !p.filesystem.dangerously_writable_git && !env.contains("GIT_CONFIG_COUNT")) {
    constexpr std::pair<const char*, const char*> kGitConfig[] = {
        {"gc.writeCommitGraph", "false"},
        {"fetch.writeCommitGraph", "false"},
        {"repack.updateServerInfo", "false"},
        {"core.splitIndex", "false"},
        {"core.untrackedCache", "false"},
        {"core.fsmonitor", "false"},
        {"gc.auto", "0"},
        {"fetch.unpackLimit", "2147483647"},
        {"transfer.unpackLimit", "2147483647"},
    };
    int i = 0;
    for (const auto& [key, value] : kGitConfig) {
      env[fmt::format("GIT_CONFIG_KEY_{}", i)] = key;
      env[fmt::format("GIT_CONFIG_VALUE_{}", i)] = value;
      ++i;
    }
    env["GIT_CONFIG_COUNT"] = std::to_string(i);
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

jail::ExecRequest exec_request(const Policy& p, const Context& ctx, std::vector<std::string> argv) {
  jail::ExecRequest req;
  req.argv = std::move(argv);
  req.env = jail_environment(p, ctx);
  req.cwd =
      is_normal_absolute(ctx.cwd) && is_within(ctx.cwd, ctx.workspace) ? ctx.cwd : ctx.workspace;
  return req;
}

}  // namespace brig::policy
