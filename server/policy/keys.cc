#include "server/policy/keys.h"

#include <algorithm>
#include <deque>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "jail/spec_validate.h"
#include "server/policy/lists.h"
#include "server/policy/llm_routes.h"
#include "server/policy/names.h"
#include "server/policy/special_keys.h"
#include "server/policy/toml_text.h"

namespace brig::policy {
namespace {

// The rules as written, one line.
std::string rules_text(const std::vector<NetRule>& rules) {
  std::vector<std::string> texts;
  for (const NetRule& r : rules) texts.push_back(r.text);
  return names_text(texts);
}

// `type` and `doc` are Markdown, as policies/README.md shows them.
constexpr Key kKeys[] = {
    // --- the top level ---
    {.section = "",
     .name = "description",
     .type = "string",
     .doc = "one line shown by `brig policy check/show`",
     .apply =
         [](Reader& r, Policy& p, const Setting& s) {
           if (auto text = r.string(s.value, s.name, "\"what this policy is for\"")) {
             p.description = *text;
             r.note(s.name, s.value);
           }
         },
     .show = [](const Policy& p) { return toml_string(p.description, true); }},
    // Followed by the loader (loader.cc) before any file is applied; not shown,
    // since `brig policy show` writes the chain resolved.
    {.section = "", .name = "extends", .type = "string", .doc = "the policy this one starts from"},

    // --- [filesystem] ---
    {.section = "filesystem",
     .name = "workspace",
     .type = "`\"read_write\"` \\| `\"read_only\"`",
     .doc = "how the workspace is bound, at its own host path",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { r.set(p.filesystem.workspace, s, names::kWorkspaceAccess); },
     .show =
         [](const Policy& p) {
           return name_text(p.filesystem.workspace, names::kWorkspaceAccess);
         }},
    {.section = "filesystem",
     .name = "read_only",
     .form = Form::list,
     .type = "list of paths",
     .doc = "host paths bound read-only at their own path; empty = nothing else from the host",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { read_path_rules(r, p.filesystem.read_only, s); },
     .show = [](const Policy& p) { return path_rules_text(p.filesystem.read_only); }},
    {.section = "filesystem",
     .name = "read_write",
     .form = Form::list,
     .type = "list of paths",
     .doc = "host paths bound writable; empty = nothing else writable",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { read_path_rules(r, p.filesystem.read_write, s); },
     .show = [](const Policy& p) { return path_rules_text(p.filesystem.read_write); }},
    {.section = "filesystem",
     .name = "hidden",
     .form = Form::list,
     .type = "list of paths",
     .doc = "never visible: absent, or masked (an empty read-only tmpfs, or `/dev/null` for a "
            "file) wherever a bound path shows the file — at its own path, and where a symlink on "
            "the host leads to it (the mask goes on the real file); empty = nothing hidden beyond "
            "what is not bound. Under a *writable* bound path a hidden path cannot hold (the host "
            "may write or replace the file later; the jail cannot rename its parents away, they "
            "are pinned as for a nested `read_only` path): `brig policy check` says so, for the "
            "paths the policy names and with the current directory as the "
            "workspace. Under a *read-only* one it holds even against files the host creates or "
            "replaces later (docs/jail.md, *hidden*). A `read_only`/`read_write` path inside a "
            "hidden one is an error, and so is a workspace inside one. A mask covers a path, not a "
            "file: a hard link to a masked file from elsewhere in a bound tree stays readable",
     .apply =
         [](Reader& r, Policy& p, const Setting& s) {
           read_paths(r, p.filesystem.hidden, s, "[\"~/.ssh\", \"~/.aws\"]");
         },
     .show = [](const Policy& p) { return paths_text(p.filesystem.hidden); }},
    {.section = "filesystem",
     .name = "tmp_size",
     .type = "size",
     .doc = "the private `/tmp` tmpfs, and `/dev/shm`, each; `0` = the kernel's default (half of "
            "RAM)",
     .apply =
         [](Reader& r, Policy& p, const Setting& s) {
           if (auto size = r.size(s.value, s.name, /*allow_unlimited=*/false)) {
             p.filesystem.tmp_size = size->value_or(0);
             r.note(s.name, s.value);
           }
         },
     .show = [](const Policy& p) { return tmpfs_size_text(p.filesystem.tmp_size); }},
    {.section = "filesystem",
     .name = "private_home",
     .type = "bool",
     .doc = "an empty, writable tmpfs at your home's path replaces your real home (`HOME` is set "
            "to it by `default`); `false` = your home is not mounted at all unless a list names it",
     .apply = [](Reader& r, Policy& p, const Setting& s) { r.set(p.filesystem.private_home, s); },
     .show = [](const Policy& p) { return bool_text(p.filesystem.private_home); }},
    {.section = "filesystem",
     .name = "home_size",
     .type = "size",
     .doc = "the private home's size; `0` = the kernel's default",
     .apply =
         [](Reader& r, Policy& p, const Setting& s) {
           if (auto size = r.size(s.value, s.name, /*allow_unlimited=*/false)) {
             p.filesystem.home_size = size->value_or(0);
             r.note(s.name, s.value);
           }
         },
     .show = [](const Policy& p) { return tmpfs_size_text(p.filesystem.home_size); }},
    {.section = "filesystem",
     .name = "dangerously_writable_git",
     .type = "bool",
     .doc = "see *git* below",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { r.set(p.filesystem.dangerously_writable_git, s); },
     .show = [](const Policy& p) { return bool_text(p.filesystem.dangerously_writable_git); }},
    {.section = "filesystem",
     .name = "dangerously_devices",
     .form = Form::list,
     .type = "list of paths under `/dev`",
     .doc = "host device nodes (or a directory of them, like `/dev/dri`) added to the jail's "
            "minimal `/dev` at the same path, without `nodev`; empty = only the minimal set. See "
            "*devices* below",
     .apply =
         [](Reader& r, Policy& p, const Setting& s) {
           read_path_rules(r, p.filesystem.dangerously_devices, s, &jail::device_path_problem);
         },
     .show = [](const Policy& p) { return path_rules_text(p.filesystem.dangerously_devices); }},

    // --- [environment] ---
    {.section = "environment",
     .name = "pass",
     .form = Form::list,
     .type = "list of names",
     .doc = "host variables copied by name; `\"LC_*\"` copies every name with that prefix; empty "
            "= nothing from the host",
     .apply = &apply_env_pass,
     .show = [](const Policy& p) { return names_text(p.environment.pass); }},
    // A table: last in its section, since `brig policy show` writes it as one.
    {.section = "environment",
     .name = "set",
     .form = Form::table,
     .type = "table of strings",
     .doc = "fixed values, expanded like paths (and `~` after each `:`, for PATH-like values); "
            "they win over `pass`",
     .apply = &apply_env_set,
     .show =
         [](const Policy& p) {
           std::string out;
           for (const auto& [name, value] : p.environment.set)
             out += fmt::format("{} = {}\n", name, toml_string(value, true));
           return out;
         }},

    // --- [limits] ---
    {.section = "limits",
     .name = "memory",
     .type = "size (≥ 1MiB)",
     .doc = "the whole jail's memory: a cgroup where one can be made, else `RLIMIT_DATA` per "
            "process",
     .apply = &apply_memory,
     .show = [](const Policy& p) { return size_limit_text(p.limits.memory_bytes); }},
    {.section = "limits",
     .name = "pids",
     .type = "integer",
     .doc = "the jail's processes and threads: cgroup `pids.max`, else `RLIMIT_NPROC`",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { read_count_limit(r, p.limits.pids, s, /*min=*/1); },
     .show = [](const Policy& p) { return count_limit_text(p.limits.pids); }},
    {.section = "limits",
     .name = "cpu_time",
     .type = "duration, whole seconds",
     .doc = "CPU time per process (`RLIMIT_CPU`)",
     .apply = &apply_cpu_time,
     .show =
         [](const Policy& p) {
           const auto& s = p.limits.cpu_seconds;
           return duration_limit_text(s ? std::optional(std::chrono::milliseconds(*s * 1000))
                                        : std::nullopt);
         }},
    {.section = "limits",
     .name = "file_size",
     .type = "size",
     .doc = "the largest file a process may write (`RLIMIT_FSIZE`)",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { read_size_limit(r, p.limits.file_size_bytes, s); },
     .show = [](const Policy& p) { return size_limit_text(p.limits.file_size_bytes); }},
    {.section = "limits",
     .name = "open_files",
     .type = "integer (≥ 3)",
     .doc = "file descriptors per process (`RLIMIT_NOFILE`)",
     // stdin, stdout and stderr need three.
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { read_count_limit(r, p.limits.open_files, s, /*min=*/3); },
     .show = [](const Policy& p) { return count_limit_text(p.limits.open_files); }},
    {.section = "limits",
     .name = "wall_time",
     .type = "duration",
     .doc = "the whole jail is killed after this long; `brig run --timeout` overrides it",
     .apply = &apply_wall_time,
     .show = [](const Policy& p) { return duration_limit_text(p.limits.wall_time); }},

    // --- [seccomp], [landlock] ---
    {.section = "seccomp",
     .name = "enabled",
     .type = "bool",
     .doc = "the syscall filter (no mount, ptrace, bpf, new namespaces, setuid files, …)",
     .apply = [](Reader& r, Policy& p, const Setting& s) { r.set(p.seccomp, s); },
     .show = [](const Policy& p) { return bool_text(p.seccomp); }},
    {.section = "landlock",
     .name = "enabled",
     .type = "bool",
     .doc = "kernel filesystem rules that match the mounts (and the TCP rule of "
            "`network.loopback_servers`)",
     .apply = [](Reader& r, Policy& p, const Setting& s) { r.set(p.landlock, s); },
     .show = [](const Policy& p) { return bool_text(p.landlock); }},

    // --- [namespaces] ---
    {.section = "namespaces",
     .name = "dangerously_share",
     .form = Form::list,
     .type = "list of `user mount pid ipc uts cgroup`",
     .doc = "namespaces shared with the host instead of the jail's own; empty = all the jail's "
            "own. The network namespace follows `network.mode`. Sharing `mount` leaves Landlock as "
            "the only filesystem boundary and needs `private_home = false`",
     .apply = &apply_dangerously_share,
     .show =
         [](const Policy& p) { return names_text(p.dangerously_share, names::kSharedNamespaces); }},

    // --- [network] ---
    {.section = "network",
     .name = "mode",
     .type = "`\"none\"` \\| `\"proxy\"` \\| `\"filtered\"` \\| `\"dangerously_host\"`",
     .doc = "`none`: a network namespace of its own with nothing but loopback. `proxy`: the same "
            "loopback only, and on the jail's `127.0.0.1` an HTTP proxy with `CONNECT` on port "
            "3128 and a DNS stub on port 53, relayed by brig outside the jail: the only way out. "
            "The proxy decides each host and port by `deny`, then `allow`, then refuses; it "
            "resolves names itself and refuses a loopback, link-local or private address the "
            "policy did not name (a `hosts` entry, or an address or CIDR in `allow`). "
            "`filtered` (root or CAP_NET_ADMIN, and `net.ipv4.ip_forward = 1`): the proxy and "
            "stub too, and a veth to the host with NAT under nftables rules in the jail's "
            "namespace: TCP and UDP to the IPv4 addresses and ports `allow` names (names resolved "
            "when the jail starts, `*.domain` through the proxy only), `deny` first, nothing "
            "else. "
            "`dangerously_host`: the host's network, every address and port; no rule applies. "
            "`allow`, `deny` and `hosts` are an error with any mode but `proxy` and `filtered`",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { r.set(p.network.mode, s, names::kNetworkModes); },
     // The risky mode is named as such wherever the policy is shown.
     .show =
         [](const Policy& p) {
           return name_text(p.network.mode, names::kNetworkModes) +
                  (p.network.mode == NetworkMode::dangerously_host
                       ? "  # DANGEROUS: the host's whole network, no rule applies"
                       : "");
         }},
    {.section = "network",
     .name = "loopback_servers",
     .type = "bool",
     .doc = "`true` in `default` and `dev`, `false` in `strict`. `true`: TCP on the jail's own "
            "loopback works, for a test suite's servers — the network namespace is the boundary "
            "and has no route outside. `false`: Landlock's TCP rule also refuses every bind and "
            "connect there. That rule needs Landlock ABI 4 (Linux 6.7); an older kernel enforces "
            "the rest of Landlock and says what it lacks (`brig doctor`)",
     .apply = [](Reader& r, Policy& p, const Setting& s) { r.set(p.network.loopback_servers, s); },
     .show = [](const Policy& p) { return bool_text(p.network.loopback_servers); }},
    {.section = "network",
     .name = "allow",
     .form = Form::list,
     .type = "list of rules",
     .doc = "what `proxy` and `filtered` let through: a name (`\"pypi.org\"`), the names under a "
            "domain "
            "(`\"*.pythonhosted.org\"`, not the domain itself), an address or a CIDR, each with an "
            "optional `:port` (80 and 443 without one); see *Network rules* below. Empty = nothing "
            "outside the jail",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { read_net_rules(r, p.network.rules.allow, s); },
     .show = [](const Policy& p) { return rules_text(p.network.rules.allow); }},
    {.section = "network",
     .name = "deny",
     .form = Form::list,
     .type = "list of rules",
     .doc = "refused even where `allow` lets them through (the same forms); an address or CIDR "
            "here is refused even when a name resolves to it, or `hosts` names it. Empty = "
            "nothing beyond what `allow` leaves out",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { read_net_rules(r, p.network.rules.deny, s); },
     .show = [](const Policy& p) { return rules_text(p.network.rules.deny); }},
    // A table: last in its section.
    {.section = "network",
     .name = "hosts",
     .form = Form::table,
     .type = "table of addresses",
     .doc = "static names for the proxy and the DNS stub, `{ \"db.test\" = \"10.1.2.7\" }`, merged "
            "by name across `extends`. A name here still needs `allow`; its address is then "
            "reachable for it even when private",
     .apply = &apply_net_hosts,
     .show =
         [](const Policy& p) {
           std::string out;
           for (const StaticHost& h : p.network.rules.hosts) {
             out += fmt::format("{} = {}\n", toml_string(h.name, false),
                                toml_string(address_text(h.address), false));
           }
           return out;
         }},

    // --- [llm] ---
    {.section = "llm",
     .name = "routes",
     .form = Form::list,
     .type = "list of routes (`[[llm.routes]]`)",
     .doc = "the placeholder-key LLM proxy (docs/llm.md): each route gives the jail a base URL "
            "(`http://127.0.0.1:3129/<prefix>`) and a placeholder key in the provider's usual "
            "variables, and brig swaps the placeholder for the real key on the way out. Keys: "
            "`provider` (`\"anthropic\"`, `\"openai\"`, `\"gemini\"`, "
            "`\"openai-compatible\"`: target, header and variables), `prefix`, `target` "
            "(`https://…`, or `http://` to a loopback host), `header` (`bearer`, `x-api-key` or a "
            "header name), `key_env` or `key_file` (the real key; never inline; a key file "
            "readable by others is refused), `ca_file`, `dangerously_skip_verify`, `env = { key, "
            "base_url }`. A route whose key is missing is refused when brig starts. Works in "
            "`none` and `proxy`; an error with `dangerously_host`. Empty = no LLM proxy",
     .apply = &apply_llm_routes,
     .show = [](const Policy& p) { return llm_routes_text(p.llm.routes); }},

    // --- [identity] ---
    {.section = "identity",
     .name = "as_root",
     .type = "`\"mapped\"` \\| `\"user\"` \\| `\"dangerously_host_root\"`",
     .doc = "`mapped`: uid 0 inside, the unprivileged `uid`/`gid` below outside, and host root "
            "mapped nowhere, so root-only host files are unreadable with no mask; the workspace "
            "keeps its owner through an idmapped mount (its owner's files are the jail root's, new "
            "files are its owner's on disk), so a root-owned workspace stays writable. `user`: the "
            "command runs as `uid`/`gid` inside and outside; a root-owned workspace is read-only "
            "to it. `dangerously_host_root`: uid 0 inside is host root — capabilities dropped, "
            "`/proc/sys` read-only, setuid files refused, root's secret files masked, but every "
            "other root-only file a bind shows is readable",
     .apply = &apply_as_root,
     .show = [](const Policy& p) { return name_text(p.identity.as_root, names::kRootIdentities); }},
    {.section = "identity",
     .name = "uid",
     .type = "integer",
     .doc = "the host uid of `mapped` and `user` (65534 is nobody); 0 is refused",
     .apply = [](Reader& r, Policy& p, const Setting& s) { read_host_id(r, p.identity.uid, s); },
     .show = [](const Policy& p) { return std::to_string(p.identity.uid); }},
    {.section = "identity",
     .name = "gid",
     .type = "integer",
     .doc = "the host gid of `mapped` and `user` (65534 is nobody's group); 0 is refused for "
            "`mapped`",
     .apply = [](Reader& r, Policy& p, const Setting& s) { read_host_id(r, p.identity.gid, s); },
     .show = [](const Policy& p) { return std::to_string(p.identity.gid); }},
    {.section = "identity",
     .name = "dangerously_unmask_root_secrets",
     .type = "bool",
     .doc = "with `dangerously_host_root`, `/etc/shadow`, `/etc/gshadow` (and their `-` backups), "
            "`/etc/security/opasswd`, the ssh host keys and sudoers are masked, since root reads "
            "them without any capability; `true` shows them. The other modes need no mask",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { r.set(p.identity.dangerously_unmask_root_secrets, s); },
     .show = [](const Policy& p) { return bool_text(p.identity.dangerously_unmask_root_secrets); }},

    // --- [require] ---
    {.section = "require",
     .name = "layers",
     .form = Form::list,
     .type = "list of `namespaces landlock seccomp cgroups capabilities`",
     .doc = "layers that must be enforced, or brig refuses to run the command (exit 125, saying "
            "which and why). The others are best effort: skipped where the kernel refuses them, "
            "and reported (`brig doctor`, the server's instructions). Empty = everything best "
            "effort",
     .apply = [](Reader& r, Policy& p,
                 const Setting& s) { read_enum_list(r, p.require, s, names::kLayers); },
     .show = [](const Policy& p) { return names_text(p.require, names::kLayers); }},

    // --- [tools] ---
    {.section = "tools",
     .name = "disabled",
     .form = Form::list,
     .type = "list of `exec job read_file write_file edit_file list_directory find_files search`",
     .doc = "MCP tools `brig serve` does not offer; empty = all",
     .apply = &apply_disabled_tools,
     .show = [](const Policy& p) { return names_text(p.disabled_tools); }},
};

// The names derived from kKeys, made once: _add forms need storage.
struct Index {
  std::deque<std::string> add_names;  // a deque: views into it stay valid as it grows
  std::vector<std::string_view> sections;
  std::map<std::string_view, std::vector<std::string_view>> names;

  Index() {
    for (const Key& k : kKeys) {
      if (!k.section.empty() &&
          std::find(sections.begin(), sections.end(), k.section) == sections.end())
        sections.push_back(k.section);
      std::vector<std::string_view>& in = names[k.section];
      in.push_back(k.name);
      if (k.form == Form::list) in.push_back(add_names.emplace_back(fmt::format("{}_add", k.name)));
    }
    std::vector<std::string_view>& top = names[""];
    top.insert(top.end(), sections.begin(), sections.end());
  }
};

const Index& index() {
  static const Index i;
  return i;
}

}  // namespace

std::span<const Key> policy_keys() {
  return kKeys;
}

const Key* find_key(std::string_view section, std::string_view name) {
  for (const Key& k : kKeys) {
    if (k.section != section) continue;
    if (k.name == name) return &k;
    if (k.form == Form::list && name.size() == k.name.size() + 4 && name.starts_with(k.name) &&
        name.ends_with("_add"))
      return &k;
  }
  return nullptr;
}

std::span<const std::string_view> section_names() {
  return index().sections;
}

std::span<const std::string_view> key_names(std::string_view section) {
  auto it = index().names.find(section);
  if (it == index().names.end()) return {};
  return it->second;
}

}  // namespace brig::policy
