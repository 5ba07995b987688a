// JailSpec: everything the kernel is asked to enforce for one jail, as a plain
// value. It is fully resolved (absolute paths, bytes, milliseconds) by the
// policy layer, validated by spec_validate, and needs no I/O to read. The
// jail layer never sees TOML or JSON; the server never sees clone flags.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace brig::jail {

// Which namespaces clone3 creates. All on by default; a policy can turn some
// off only with a dangerously_* key (net off = the host's network).
struct Namespaces {
  bool user = true;
  bool mount = true;
  bool pid = true;
  bool ipc = true;
  bool uts = true;
  bool net = true;
  bool cgroup = true;
  friend bool operator==(const Namespaces&, const Namespaces&) = default;
};

// The ids the command runs as inside the jail, and the host ids they map to.
// Unprivileged brig can only map its own uid/gid. As root, `outside_*` may be
// an unprivileged host id, in one of two ways:
// - map_launcher (the default): the launcher's own ids (host root) are
//   mapped to themselves too; the jail's init keeps them to build the jail
//   and only the command switches to inside_*.
// - !map_launcher: the uid and gid maps hold inside_* -> outside_* and
//   nothing else, so no process of the jail, its init included, is ever host
//   root; the init switches to inside_* (which must be 0, the jail's root)
//   before it touches anything.
struct Identity {
  uid_t inside_uid = 0;
  gid_t inside_gid = 0;
  uid_t outside_uid = 0;
  gid_t outside_gid = 0;
  bool map_launcher = true;
  friend bool operator==(const Identity&, const Identity&) = default;
};

// A host device node (or a directory of them, like /dev/dri) that a dev mount
// adds to its minimal set. Risky: the device's driver becomes reachable from
// the jail, and as host root a block device is the raw disk.
struct Device {
  std::string path;       // host path under /dev; appears at the same place under the dev mount
  bool optional = false;  // missing on the host: skipped; otherwise setup fails with ENOENT
  friend bool operator==(const Device&, const Device&) = default;
};

// One step of the mount plan, applied in order inside the new root (a tmpfs).
// Parents come before children, masks after the tree they mask.
struct Mount {
  enum class Kind {
    bind,   // host `source` at jail `target`
    tmpfs,  // empty tmpfs at `target` (size_bytes, mode)
    proc,   // procfs of the jail's pid namespace at `target`; when the jail's uid 0 is host
            // root, sys, sysrq-trigger, irq, bus, fs read-only and kcore, keys, timer_list…
            // masked, as container runtimes do
    dev,    // minimal /dev at `target`: null zero full random urandom tty, pts, shm, and
            // `devices`
    mask,   // hide `target` under an already bound tree: empty read-only tmpfs
            // over a directory, /dev/null over a file (hard links stay readable);
            // a target that does not exist is skipped (nothing to hide)
    git,    // the repository at `target` (a .git inside a writable bind), as git
            // needs it: objects/, refs/, logs/ read-write, git's state files
            // (index, HEAD, …) private to the jail and written back when it ends,
            // everything else read-only, new top-level names never reaching the
            // host (jail/steps/git_state.h); a .git file is bound read-only; a
            // missing one or a symlink is skipped. Host path = jail path.
    file,   // a read-only file holding `content` over the file `target` wherever a bind
            // shows it (like mask: a host symlink there is followed unless a writable
            // tree holds it): /etc/resolv.conf naming the jail's DNS stub. Planned
            // after every bind; nothing there to cover fails (step "mount") unless
            // `optional`
  };
  Kind kind = Kind::bind;
  std::string source;     // bind only: absolute host path
  std::string target;     // absolute path inside the jail
  bool writable = false;  // bind/tmpfs: read-write; otherwise read-only, recursively
  bool optional = false;  // bind: a missing source is skipped; otherwise setup fails with
                          // ENOENT (step "mount"); file: nothing to cover is skipped
  // bind: the tree keeps its owner. Shown through an idmapped mount that the
  // (root) launcher makes: the uid and gid that own the source on disk
  // appear as identity.inside_* (the jail's root), and what the jail creates
  // there is owned on disk by them. Other owners appear unmapped (nobody).
  // A filesystem without idmapped mounts fails the jail; nothing falls back.
  bool keep_owner = false;
  uint64_t size_bytes = 0;      // tmpfs: its size; dev: the size of /dev/shm; git: the
                                // private layer's; 0 = the kernel default (half of RAM)
  mode_t mode = 0755;           // tmpfs: mode of its root
  std::vector<Device> devices;  // dev: host devices beyond the minimal set; empty = none
  std::string content;          // file: what the file holds (at most kMaxFileContent bytes)
  friend bool operator==(const Mount&, const Mount&) = default;
};

// Landlock rules, expressed on paths as seen inside the jail (they are opened
// after pivot_root). Landlock only grants: anything not listed is denied for
// the access types the ruleset handles.
struct LandlockRules {
  bool enabled = true;
  std::vector<std::string> read_only;   // read, list, execute
  std::vector<std::string> read_write;  // also create, write, remove, rename, truncate
  // List the directory and those beneath it, nothing more: the jail's
  // private root, whose own directories only hold the mount points.
  std::vector<std::string> list_only;
  // TCP (ABI >= 4). Applied only where the network namespace is not already
  // the boundary; empty lists with restrict_tcp = deny all bind/connect.
  bool restrict_tcp = false;
  std::vector<uint16_t> bind_tcp;
  std::vector<uint16_t> connect_tcp;
  // Scoping (ABI >= 6): no connecting to abstract unix sockets, and no
  // signals, outside the jail's own Landlock domain.
  bool scope_abstract_unix = true;
  bool scope_signals = true;
  friend bool operator==(const LandlockRules&, const LandlockRules&) = default;
};

// The seccomp filter. The syscall lists themselves are data in
// seccomp_profiles; the spec only says whether and which.
struct SeccompSpec {
  bool enabled = true;
  friend bool operator==(const SeccompSpec&, const SeccompSpec&) = default;
};

// Resource limits. Empty = no limit from brig (the host's own still apply).
struct Limits {
  std::optional<uint64_t> memory_bytes;     // cgroup memory limit; RLIMIT_DATA without cgroups
  std::optional<uint64_t> pids;             // the command's processes and threads: cgroup
                                            // pids.max; RLIMIT_NPROC (+1, the init) without
  std::optional<uint64_t> cpu_seconds;      // RLIMIT_CPU
  std::optional<uint64_t> file_size_bytes;  // RLIMIT_FSIZE
  std::optional<uint64_t> open_files;       // RLIMIT_NOFILE
  std::optional<std::chrono::milliseconds> wall_time;  // SIGKILL to the init after this
  friend bool operator==(const Limits&, const Limits&) = default;
};

enum class NetworkMode {
  none,              // own network namespace, loopback only (and `listeners` on it)
  filtered,          // own network namespace, loopback and a veth to the host (`filter`)
  dangerously_host,  // the host's network (no net namespace)
};

// What a `filtered` jail may reach over its veth (IPv4 only), as nftables
// rules in its own network namespace: an output chain that drops every
// packet but those to loopback, replies, and `allow` entries not in `deny`.
// Made by the program `program` (brig-netfilter, jail/netfilter/), which
// needs CAP_NET_ADMIN in the host's network namespace.
struct NetFilter {
  // An IPv4 network and a range of ports, over TCP and UDP.
  struct Entry {
    std::array<std::uint8_t, 4> address{};  // host bits zero
    std::uint8_t prefix = 32;               // 0-32
    std::uint16_t first_port = 1;
    std::uint16_t last_port = 65535;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  std::vector<Entry> allow;
  std::vector<Entry> deny;  // wins over allow
  std::string program;      // absolute path of brig-netfilter
  friend bool operator==(const NetFilter&, const NetFilter&) = default;
};
inline constexpr std::size_t kMaxFilterEntries = 4096;

// A listening socket on the jail's 127.0.0.1, made inside its network
// namespace by the network helper and handed to the launcher's caller
// (RunningJail::take_listeners), which accepts what the jail connects to it
// from outside the jail: brig's egress proxy and DNS stub (the `proxy`
// network mode), the LLM proxy.
struct Listener {
  enum class Protocol : std::uint8_t { tcp, udp };
  Protocol protocol = Protocol::tcp;
  std::uint16_t port = 0;
  friend bool operator==(const Listener&, const Listener&) = default;
};
inline constexpr std::size_t kMaxListeners = 8;
inline constexpr std::size_t kMaxFileContent = 64 * 1024;

// The protection layers a policy can require. A required layer that the
// kernel refuses fails the jail closed; others degrade and are reported.
enum class Layer : uint8_t { namespaces, landlock, seccomp, cgroups, capabilities };

struct JailSpec {
  Namespaces namespaces;
  Identity identity;
  std::vector<Mount> mounts;  // in order; empty = the host's root (no mount namespace use)
  std::string hostname = "brig";
  NetworkMode network = NetworkMode::none;
  // network none or filtered: made in the jail's namespace, in this order
  std::vector<Listener> listeners;
  NetFilter filter;  // network filtered only
  Limits limits;
  LandlockRules landlock;
  SeccompSpec seccomp;
  std::vector<Layer> required = {Layer::namespaces, Layer::landlock, Layer::seccomp};
  friend bool operator==(const JailSpec&, const JailSpec&) = default;
};

// One command to run in a jail.
struct ExecRequest {
  std::vector<std::string> argv;  // argv[0] without '/' is looked up in the env's PATH
  std::vector<std::string> env;   // "NAME=value", exactly; nothing is inherited
  std::string cwd;                // inside the jail; empty = "/"
  // The jail's stdio; -1 = the caller's own fd 0/1/2. Every other fd is closed.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  friend bool operator==(const ExecRequest&, const ExecRequest&) = default;
};

}  // namespace brig::jail
