// Policy: one resolved TOML policy (after `extends`, `~` and `$VAR`
// expansion) as a plain value. The key table (keys.h) maps each key to its
// field here, and policies/README.md documents every key; the field comments
// here say what the default and the empty value mean. A policy
// says WHAT a jail may touch; to_jail_spec() turns it, for one workspace and
// one caller, into the jail::JailSpec the kernel enforces.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "jail/spec.h"
#include "server/policy/net_rules.h"

namespace brig::policy {

// A host path bound into the jail at the same path. optional: a path missing
// on the host is skipped instead of failing the jail.
struct PathRule {
  std::string path;  // absolute and normalized
  bool optional = false;
  friend bool operator==(const PathRule&, const PathRule&) = default;
};

enum class WorkspaceAccess { read_write, read_only };

struct Filesystem {
  WorkspaceAccess workspace = WorkspaceAccess::read_write;  // bound at its own host path
  std::vector<PathRule> read_only;                          // empty = nothing else from the host
  std::vector<PathRule> read_write;                         // empty = nothing else writable
  // Absent inside the jail; masked where they sit under a bound tree. Empty =
  // nothing hidden beyond what is not bound.
  std::vector<std::string> hidden;
  uint64_t tmp_size =
      0;  // the private /tmp and /dev/shm, each; 0 = the kernel default (half of RAM)
  bool private_home = true;  // a private writable tmpfs over the caller's home path
  uint64_t home_size = 0;    // its size; 0 = the kernel default
  // false: the workspace's .git is bound read-only onto itself (hooks,
  // config or a commondir planted there would run code outside the jail;
  // docs/jail.md, "git").
  bool dangerously_writable_git = false;
  // Host devices under /dev (/dev/fuse, /dev/net/tun, /dev/dri) added to the
  // jail's minimal /dev at the same path. Empty = only the minimal set.
  std::vector<PathRule> dangerously_devices;
  friend bool operator==(const Filesystem&, const Filesystem&) = default;
};

struct Environment {
  // Host variables copied by name; "LC_*" copies every name with that
  // prefix. Empty = nothing from the host.
  std::vector<std::string> pass;
  std::map<std::string, std::string> set;  // fixed values; they win over pass
  friend bool operator==(const Environment&, const Environment&) = default;
};

// What the jail's network namespace reaches. Both none and proxy give the
// jail a namespace of its own with only loopback; proxy adds brig's egress
// proxy and DNS stub on its 127.0.0.1, the only way out. filtered adds those
// and a veth to the host with NAT, under nftables rules in the jail's
// namespace (root or CAP_NET_ADMIN; docs/network.md).
enum class NetworkMode { none, proxy, filtered, dangerously_host };
// The proxy mode's ports on the jail's 127.0.0.1, as its doc states them
// (to_jail_spec.h, egress_listeners).
inline constexpr std::uint16_t kProxyPort = 3128;
inline constexpr std::uint16_t kDnsPort = 53;

struct Network {
  NetworkMode mode = NetworkMode::none;
  // Whether the command may bind and connect TCP sockets (servers on the
  // jail's own loopback). false: Landlock refuses TCP bind and connect.
  bool loopback_servers = false;
  // What the egress proxy (and in filtered mode the kernel's rules) let
  // through: modes proxy and filtered only, the loader refuses rules with
  // another. Empty allow = nothing outside is reachable.
  NetRules rules;
  friend bool operator==(const Network&, const Network&) = default;
};

// The LLM proxy's port on the jail's 127.0.0.1 (docs/llm.md): next to the
// egress proxy's, and served in every mode but dangerously_host once the
// policy lists a route.
inline constexpr std::uint16_t kLlmPort = 3129;

// One [[llm.routes]] entry, presets filled in (llm_routes.h). The real key
// is named here (a variable of brig's environment or a file), never held:
// server/llm/ reads it when brig starts.
struct LlmRoute {
  std::string provider;  // a preset's name ("anthropic", ...), or "" for a route of one's own
  std::string prefix;    // the first path segment on the jail's listener: /<prefix>/...
  std::string target;    // the upstream base URL: https://host[:port][/path]
  std::string header;    // where the key goes: "bearer", "x-api-key", or a header name
  std::string key_env;   // the real key: this variable of brig's environment, or
  std::string key_file;  // this file (absolute; owner-only mode, checked at start)
  std::string ca_file;   // extra trust for this route only; "" = the system store only
  bool dangerously_skip_verify = false;  // no TLS verification at all (self-signed test targets)
  std::string key_variable;              // the jail's variable holding the placeholder
  std::string base_url_variable;  // the jail's variable holding http://127.0.0.1:3129/<prefix>
  friend bool operator==(const LlmRoute&, const LlmRoute&) = default;
};

struct Llm {
  // Empty = no LLM proxy: the jail gets no listener and no variables.
  std::vector<LlmRoute> routes;
  friend bool operator==(const Llm&, const Llm&) = default;
};

// Who the command is when brig itself runs as root. Unprivileged brig always
// runs the jail as the caller's own uid/gid.
enum class RootIdentity {
  mapped,  // uid 0 inside, the unprivileged uid/gid below outside (host root is not mapped
           // at all); the workspace keeps its owner through an idmapped mount
  user,    // uid/gid below, inside and outside; a root-owned workspace is read-only
  dangerously_host_root,  // uid 0 inside is host root (capabilities dropped, /proc hardened,
                          // root's secret files masked): root-only host files are readable
};

struct Identity {
  RootIdentity as_root = RootIdentity::mapped;
  uid_t uid = 65534;  // mapped, user: the host uid (default nobody)
  gid_t gid = 65534;
  // false: with uid 0 mapped to host root (dangerously_host_root), /etc/shadow,
  // gshadow, the ssh host keys and sudoers are masked (root reads them
  // without any capability).
  bool dangerously_unmask_root_secrets = false;
  friend bool operator==(const Identity&, const Identity&) = default;
};

// The namespaces a policy can share with the host (network: Network::mode).
enum class SharedNamespace { user, mount, pid, ipc, uts, cgroup };

struct Policy {
  std::string description;  // one line for `brig policy show/check`; may be empty
  Filesystem filesystem;
  Environment environment;
  jail::Limits limits;  // empty fields = no limit from brig
  bool seccomp = true;
  bool landlock = true;
  std::vector<SharedNamespace> dangerously_share;  // empty = every namespace is the jail's own
  Network network;
  Llm llm;
  Identity identity;
  // Layers that must be enforced or the jail is refused; the others are best
  // effort (skipped and reported when the kernel refuses them).
  std::vector<jail::Layer> require = {jail::Layer::namespaces, jail::Layer::landlock,
                                      jail::Layer::seccomp};
  std::vector<std::string> disabled_tools;  // MCP tools switched off; empty = all offered
  friend bool operator==(const Policy&, const Policy&) = default;
};

}  // namespace brig::policy
