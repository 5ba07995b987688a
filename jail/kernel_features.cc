#include "jail/kernel_features.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "jail/steps/landlock.h"

namespace brig::jail {
namespace {

// What a probe child reports: the step it reached and errno if it failed.
struct ChildReport {
  int ok = 0;
  int err = 0;
  char step[64] = {};
};

// Runs `probe` in a forked child so namespace changes never touch brig;
// the child writes its report through a pipe. The caller is single-threaded.
template <class Probe>
ChildReport in_child(Probe probe) {
  ChildReport report;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    report.err = errno;
    std::strncpy(report.step, "pipe", sizeof report.step - 1);
    return report;
  }
  pid_t pid = fork();
  if (pid < 0) {
    report.err = errno;
    std::strncpy(report.step, "fork", sizeof report.step - 1);
    close(fds[0]);
    close(fds[1]);
    return report;
  }
  if (pid == 0) {
    close(fds[0]);
    ChildReport r = probe();
    (void)!write(fds[1], &r, sizeof r);
    _exit(0);
  }
  close(fds[1]);
  ssize_t n = read(fds[0], &report, sizeof report);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof report)) {
    report = ChildReport{};
    std::strncpy(report.step, "probe child died", sizeof report.step - 1);
  }
  return report;
}

ChildReport fail(const char* step) {
  ChildReport r;
  r.err = errno;
  std::strncpy(r.step, step, sizeof r.step - 1);
  return r;
}

ChildReport success() {
  ChildReport r;
  r.ok = 1;
  return r;
}

bool write_file(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

std::string read_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Enters a new user namespace mapping the caller's ids to themselves, as the
// jail does by default.
bool enter_userns() {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER) != 0) return false;
  return write_file("/proc/self/setgroups", "deny") &&
         write_file("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") &&
         write_file("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1");
}

// Sets loopback up with an RTM_NEWLINK request: the netlink call the jail's
// network step makes, which AppArmor-restricted namespaces refuse.
bool netlink_loopback_up() {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return false;
  struct {
    nlmsghdr header;
    ifinfomsg info;
  } request{};
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = RTM_NEWLINK;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  request.info.ifi_family = AF_UNSPEC;
  request.info.ifi_index = static_cast<int>(if_nametoindex("lo"));
  request.info.ifi_flags = IFF_UP;
  request.info.ifi_change = IFF_UP;
  bool ok = false;
  if (send(fd, &request, sizeof request, 0) == static_cast<ssize_t>(sizeof request)) {
    char buffer[512];
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    auto* reply = reinterpret_cast<nlmsghdr*>(buffer);
    if (n >= static_cast<ssize_t>(sizeof(nlmsghdr) + sizeof(nlmsgerr)) &&
        reply->nlmsg_type == NLMSG_ERROR) {
      int err = reinterpret_cast<nlmsgerr*>(NLMSG_DATA(reply))->error;
      ok = err == 0;
      errno = -err;
    }
  }
  close(fd);
  return ok;
}

// The start both namespace probes share: a user namespace of the caller's
// own ids, a mount namespace, / private and a small tmpfs on /tmp. nullptr,
// or the step that failed.
const char* enter_mount_namespace_with_tmpfs() {
  if (!enter_userns()) return "user namespace with uid/gid map";
  if (unshare(CLONE_NEWNS) != 0) return "mount namespace";
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return "make / private";
  if (mount("brig-doctor", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") != 0)
    return "mount tmpfs";
  return nullptr;
}

// The whole namespace path a jail takes: user ns, then mount ns with a real
// mount, then net ns with a real netlink call, then the rest.
ChildReport probe_namespaces() {
  if (const char* failed = enter_mount_namespace_with_tmpfs()) return fail(failed);
  if (unshare(CLONE_NEWNET) != 0) return fail("net namespace");
  if (!netlink_loopback_up()) return fail("netlink: loopback up");
  if (unshare(CLONE_NEWPID) != 0) return fail("pid namespace");
  if (unshare(CLONE_NEWIPC) != 0) return fail("ipc namespace");
  if (unshare(CLONE_NEWUTS) != 0) return fail("uts namespace");
  if (sethostname("brig", 4) != 0) return fail("sethostname");
  if (unshare(CLONE_NEWCGROUP) != 0) return fail("cgroup namespace");
  return success();
}

// What the git layer (jail/steps/git_state.h) mounts: an overlay with a
// tmpfs upper layer, in a user namespace of the caller's own ids.
ChildReport probe_git_overlay() {
  if (const char* failed = enter_mount_namespace_with_tmpfs()) return fail(failed);
  for (const char* d : {"/tmp/lower", "/tmp/upper", "/tmp/work", "/tmp/git"})
    if (mkdir(d, 0755) != 0) return fail("mkdir in the tmpfs");
  if (mount("overlay", "/tmp/git", "overlay", MS_NOSUID | MS_NODEV,
            "lowerdir=/tmp/lower,upperdir=/tmp/upper,workdir=/tmp/work,userxattr") != 0)
    return fail("mount overlayfs (userxattr)");
  return success();
}

ChildReport probe_unprivileged_namespaces() {
  if (getuid() == 0) {
    // nobody: a user with no privilege at all, as most brig users are.
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0)
      return fail("become nobody");
    // A uid change clears the dumpable flag, which makes /proc/self root's
    // and the uid_map unwritable; a real unprivileged process is dumpable.
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return fail("set dumpable");
  }
  return probe_namespaces();
}

ChildReport probe_seccomp() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("no_new_privs");
  sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog program{1, &allow};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) return fail("load filter");
  if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2) return fail("filter not in force");
  return success();
}

// nftables inside a fresh user+net namespace, through libnftables loaded
// with dlopen: the jail links it only when a network mode needs it.
ChildReport probe_nftables() {
  void* lib = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    ChildReport r;
    std::strncpy(r.step, "dlopen libnftables.so.1", sizeof r.step - 1);
    return r;
  }
  using New = void* (*)(unsigned);
  using Run = int (*)(void*, const char*);
  auto nft_new = reinterpret_cast<New>(dlsym(lib, "nft_ctx_new"));
  auto nft_run = reinterpret_cast<Run>(dlsym(lib, "nft_run_cmd_from_buffer"));
  if (nft_new == nullptr || nft_run == nullptr) return fail("dlsym nft_ctx_new");
  if (!enter_userns()) return fail("user namespace with uid/gid map");
  if (unshare(CLONE_NEWNET) != 0) return fail("net namespace");
  void* ctx = nft_new(0);
  if (ctx == nullptr) return fail("nft_ctx_new");
  // Quiet: libnftables prints its errors to stderr by default.
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull >= 0) dup2(devnull, STDERR_FILENO);
  if (nft_run(ctx,
              "add table inet brig_doctor; add chain inet brig_doctor out "
              "{ type filter hook output priority 0; policy drop; }") != 0) {
    errno = EPERM;
    return fail("nft add table/chain");
  }
  return success();
}

std::string describe(const ChildReport& r) {
  std::string s = r.step;
  if (r.err != 0) s += std::string(": ") + std::strerror(r.err);
  return s;
}

// Why an unprivileged user cannot make namespaces here, and what fixes it.
std::string userns_remedy() {
  if (read_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1")
    return "AppArmor restricts unprivileged user namespaces: run "
           "scripts/install-apparmor-profile.sh (as root) to allow them for brig only";
  if (read_line("/proc/sys/kernel/unprivileged_userns_clone") == "0")
    return "sysctl -w kernel.unprivileged_userns_clone=1 (and persist it in /etc/sysctl.d)";
  if (read_line("/proc/sys/user/max_user_namespaces") == "0")
    return "sysctl -w user.max_user_namespaces=15000 (and persist it in /etc/sysctl.d)";
  return "inside a container: run it with user namespaces allowed (e.g. a seccomp profile "
         "that permits unshare/clone with CLONE_NEWUSER)";
}

Feature namespaces_feature(const char* name, const ChildReport& r, const std::string& who) {
  Feature f{name, r.ok != 0, "", ""};
  if (f.available) {
    f.detail = who +
               ": user, mount (tmpfs mounted), net (loopback up over netlink), pid, ipc, "
               "uts, cgroup namespaces";
  } else {
    f.detail = who + ": failed at " + describe(r);
    f.remedy = userns_remedy();
  }
  return f;
}

Feature landlock_feature(int abi) {
  if (abi <= 0) {
    return {"landlock", false, "landlock_create_ruleset(VERSION): " + std::string(strerror(errno)),
            "enable Landlock: boot with lsm=landlock,... (CONFIG_SECURITY_LANDLOCK=y, kernel >= "
            "5.13)"};
  }
  std::string detail = "ABI " + std::to_string(abi) + ": filesystem";
  if (abi >= 4) detail += ", TCP bind/connect";
  if (abi >= 6) detail += ", abstract-socket and signal scoping";
  return {"landlock", true, detail, abi < 6 ? "a kernel >= 6.12 adds scoping (ABI 6)" : ""};
}

// The one line that gives a jail whole-jail limits where systemd runs the
// session: a scope whose cgroup brig may manage (brig moves itself into a
// leaf of it and puts the jails beside, jail/steps/cgroups.h).
const std::string kCgroupRemedy =
    "run brig in a delegated cgroup v2: systemd-run --user --scope -p Delegate=yes brig serve …";

// cgroup v2 is usable when the caller can make a child of its own cgroup
// (delegation) and pids and memory are among the controllers offered there.
Feature cgroup_v2_feature() {
  Feature f{"cgroup.v2", false, "", ""};
  std::string root = "/sys/fs/cgroup";
  struct statfs fs {};
  if (statfs(root.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
    root = "/sys/fs/cgroup/unified";
    if (statfs(root.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
      f.detail = "no cgroup2 hierarchy mounted";
      f.remedy = "boot with systemd.unified_cgroup_hierarchy=1";
      return f;
    }
  }
  std::ifstream in("/proc/self/cgroup");
  std::string line, own;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  std::string dir = root + own;
  std::string controllers = read_line((dir + "/cgroup.controllers").c_str());
  std::string probe = dir + "/brig-doctor-" + std::to_string(getpid());
  bool writable = mkdir(probe.c_str(), 0755) == 0;
  int err = errno;
  if (writable) rmdir(probe.c_str());
  bool has_controllers = (" " + controllers + " ").find(" pids ") != std::string::npos &&
                         (" " + controllers + " ").find(" memory ") != std::string::npos;
  f.available = writable && has_controllers;
  f.detail = dir + ": " +
             (writable ? "delegated" : std::string("not writable (") + strerror(err) + ")") +
             ", controllers [" + controllers + "]";
  if (!f.available) {
    const std::string offered = read_line((root + "/cgroup.controllers").c_str());
    f.remedy = (" " + offered + " ").find(" memory ") == std::string::npos
                   ? "this host keeps the memory controller on cgroup v1 (a hybrid hierarchy): "
                     "boot with systemd.unified_cgroup_hierarchy=1, then " +
                         kCgroupRemedy
                   : kCgroupRemedy;
  }
  return f;
}

Feature cgroup_v1_feature() {
  Feature f{"cgroup.v1", true, "", ""};
  for (const char* controller : {"pids", "memory"}) {
    std::string root = std::string("/sys/fs/cgroup/") + controller;
    struct statfs fs {};
    std::string probe = root + "/brig-doctor-" + std::to_string(getpid());
    if (statfs(root.c_str(), &fs) != 0 || fs.f_type != CGROUP_SUPER_MAGIC) {
      f.available = false;
      f.detail += std::string(controller) + ": not mounted; ";
    } else if (mkdir(probe.c_str(), 0755) != 0) {
      f.available = false;
      f.detail += std::string(controller) + ": " + strerror(errno) + "; ";
    } else {
      rmdir(probe.c_str());
      f.detail += std::string(controller) + ": writable; ";
    }
  }
  f.detail.resize(f.detail.size() - 2);
  if (!f.available)
    f.remedy = getuid() == 0 ? "mount the v1 pids and memory controllers"
                             : "v1 controllers need root; without cgroups, memory is capped "
                               "per process only (RLIMIT_DATA), not for the jail as a whole";
  return f;
}

LayerStatus degraded(Layer layer, const Feature* feature) {
  std::string detail = feature == nullptr ? "not probed" : feature->detail;
  if (feature != nullptr && !feature->remedy.empty()) detail += "; remedy: " + feature->remedy;
  return {layer, LayerState::degraded, detail};
}

bool wants_namespaces(const Namespaces& ns) {
  return ns.user || ns.mount || ns.pid || ns.ipc || ns.uts || ns.net || ns.cgroup;
}

}  // namespace

LayerReport predict_layers(const JailSpec& spec, const KernelFeatures& kernel) {
  LayerReport report;
  if (!wants_namespaces(spec.namespaces))
    report.layers.push_back({Layer::namespaces, LayerState::off, ""});
  else if (kernel.namespaces)
    report.layers.push_back({Layer::namespaces, LayerState::enforced, ""});
  else
    report.layers.push_back(degraded(Layer::namespaces, kernel.find("namespaces")));

  const LandlockRules& ll = spec.landlock;
  if (ll.enabled && kernel.landlock_abi == 0) {
    report.layers.push_back(degraded(Layer::landlock, kernel.find("landlock")));
  } else if (auto planned = landlock::plan(ll, kernel.landlock_abi); !planned) {
    report.layers.push_back({Layer::landlock, LayerState::degraded, planned.error().to_string()});
  } else {
    // The launcher reports the same function of the same plan.
    report.layers.push_back(landlock::layer_status(ll, *planned));
  }

  if (!spec.seccomp.enabled)
    report.layers.push_back({Layer::seccomp, LayerState::off, ""});
  else if (kernel.seccomp)
    report.layers.push_back({Layer::seccomp, LayerState::enforced, ""});
  else
    report.layers.push_back(degraded(Layer::seccomp, kernel.find("seccomp")));

  bool limits = spec.limits.memory_bytes || spec.limits.pids;
  if (!limits) {
    report.layers.push_back({Layer::cgroups, LayerState::off, ""});
  } else if (kernel.cgroup_tier == "v2") {
    report.layers.push_back({Layer::cgroups, LayerState::enforced, ""});
    report.limits_tier = LimitsTier::cgroup_v2;
  } else if (kernel.cgroup_tier == "v1") {
    report.layers.push_back({Layer::cgroups, LayerState::enforced, "v1 pids and memory"});
    report.limits_tier = LimitsTier::cgroup_v1;
  } else {
    LayerStatus status = degraded(Layer::cgroups, kernel.find("cgroup.v2"));
    std::string instead;
    if (spec.limits.memory_bytes)
      instead += std::string("memory: RLIMIT_DATA, ") + kMemoryPerProcess +
                 " (a tmpfs the jail fills is not counted); ";
    if (spec.limits.pids) instead += std::string("pids: ") + kPidsPerUser + "; ";
    status.detail = instead + status.detail;
    if (status.detail.find("remedy:") == std::string::npos)
      status.detail += "; remedy: " + kCgroupRemedy;
    report.layers.push_back(status);
    report.limits_tier = LimitsTier::rlimits;
  }

  // Dropping capabilities needs nothing from the kernel.
  report.layers.push_back({Layer::capabilities, LayerState::enforced, ""});
  return report;
}

std::vector<Layer> unmet_requirements(const JailSpec& spec, const LayerReport& report) {
  std::vector<Layer> unmet;
  for (Layer layer : spec.required) {
    const LayerStatus* status = report.find(layer);
    if (status == nullptr || status->state != LayerState::enforced) unmet.push_back(layer);
  }
  return unmet;
}

const Feature* KernelFeatures::find(const std::string& name) const {
  for (const Feature& f : features)
    if (f.name == name) return &f;
  return nullptr;
}

KernelFeatures probe_kernel_features() {
  KernelFeatures k;
  bool root = getuid() == 0;

  ChildReport own = in_child(probe_namespaces);
  ChildReport unprivileged = root ? in_child(probe_unprivileged_namespaces) : own;
  k.features.push_back(namespaces_feature("namespaces", own,
                                          root ? "as root" : "as uid " + std::to_string(getuid())));
  k.features.push_back(namespaces_feature("namespaces.unprivileged", unprivileged,
                                          root ? "as nobody (uid 65534)" : "as this user"));
  k.namespaces = own.ok != 0;
  k.rootless_namespaces = unprivileged.ok != 0;

  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /* VERSION */);
  k.landlock_abi = abi > 0 ? static_cast<int>(abi) : 0;
  k.features.push_back(landlock_feature(k.landlock_abi));

  ChildReport seccomp = in_child(probe_seccomp);
  k.seccomp = seccomp.ok != 0;
  k.features.push_back({"seccomp", k.seccomp,
                        k.seccomp ? "filter mode (no_new_privs + BPF filter loaded)"
                                  : "failed at " + describe(seccomp),
                        k.seccomp ? "" : "a kernel built with CONFIG_SECCOMP_FILTER=y"});

  ChildReport nft = in_child(probe_nftables);
  k.features.push_back({"nftables", nft.ok != 0,
                        nft.ok ? "table and output chain loaded in a new user+net namespace"
                               : "failed at " + describe(nft),
                        nft.ok ? "" : "install libnftables1; the kernel needs nf_tables"});

  ChildReport git = in_child(probe_git_overlay);
  k.git_layer = git.ok != 0;
  k.features.push_back(
      {"git.overlay", k.git_layer,
       k.git_layer ? "overlayfs with a tmpfs upper layer mounted in a user namespace: git can "
                     "commit in a jail, its configuration stays read-only"
                   : "failed at " + describe(git) +
                         ": the workspace's .git is read-only as a whole in a jail (git reads, "
                         "but cannot commit)",
       k.git_layer ? "" : "Linux 5.11 or later with overlayfs (CONFIG_OVERLAY_FS)"});

  Feature v2 = cgroup_v2_feature();
  Feature v1 = cgroup_v1_feature();
  k.cgroup_tier = v2.available ? "v2" : v1.available ? "v1" : "";
  k.features.push_back(std::move(v2));
  k.features.push_back(std::move(v1));
  return k;
}

}  // namespace brig::jail
