#include "jail/launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <string_view>

#include "jail/child_plan.h"
#include "jail/command_message.h"
#include "jail/contain.h"
#include "jail/spec_validate.h"
#include "jail/status_record.h"
#include "jail/steps/clone.h"
#include "jail/steps/idmap.h"
#include "jail/steps/pid1.h"
#include "jail/steps/net.h"
#include "jail/steps/userns.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace brig::jail {
namespace {

Error step_error(const char* step, std::string what, std::string why, int err = 0) {
  return Error{std::move(what), step, std::move(why), err};
}

Error step_sys_error(const char* step, std::string what, int err) {
  return Error{std::move(what), step, ::strerror(err), err};
}

// Attaches the step to an Error from a lower layer.
Error at_step(const char* step, Error e) {
  if (!e.where.empty()) e.what += " (" + e.where + ")";
  e.where = step;
  return e;
}

bool is_required(const JailSpec& spec, Layer layer) {
  for (Layer l : spec.required)
    if (l == layer) return true;
  return false;
}

std::string namespaces_not_used(const Namespaces& ns) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on) return;
    if (!s.empty()) s += ", ";
    s += name;
  };
  add(ns.user, "user");
  add(ns.mount, "mount");
  add(ns.pid, "pid");
  add(ns.ipc, "ipc");
  add(ns.uts, "uts");
  add(ns.net, "net");
  add(ns.cgroup, "cgroup");
  return s;
}

// Sets the report's cgroups entry (in place, or appended) and limits tier.
void report_cgroups(LayerReport& r, const Limits& l, const cgroups::Group& group) {
  LayerStatus entry{Layer::cgroups, LayerState::off, ""};
  r.limits_tier = LimitsTier::none;
  if (l.pids || l.memory_bytes) {
    r.limits_tier = group.tier;
    const bool pids_ok = !l.pids || group.limits_pids;
    const bool memory_ok = !l.memory_bytes || group.limits_memory;
    if (pids_ok && memory_ok) {
      entry.state = LayerState::enforced;
    } else {
      std::string instead;
      if (!pids_ok) instead += std::string("RLIMIT_NPROC for pids, ") + kPidsPerUser;
      if (!memory_ok)
        instead += std::string(instead.empty() ? "" : "; ") + "RLIMIT_DATA for memory, " +
                   kMemoryPerProcess;
      if (group.tier == LimitsTier::none) r.limits_tier = LimitsTier::rlimits;
      entry.state = LayerState::degraded;
      entry.detail = group.detail + " -> " + instead;
    }
  }
  for (auto& existing : r.layers)
    if (existing.layer == Layer::cgroups) {
      existing = std::move(entry);
      return;
    }
  r.layers.push_back(std::move(entry));
}

// Before spawn has made the cgroups, `group` is an empty Group, and the
// cgroups entry says so until report_cgroups replaces it.
LayerReport report_layers(const JailSpec& spec, const ChildPlan& plan,
                          const cgroups::Group& group) {
  LayerReport r;
  auto add = [&](Layer layer, LayerState state, std::string detail) {
    r.layers.push_back({layer, state, std::move(detail)});
  };
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  const std::string host_ns = namespaces_not_used(spec.namespaces);
  const bool any_ns = clone::namespace_flags(spec.namespaces, true) != 0;
  add(Layer::namespaces, any_ns ? LayerState::enforced : LayerState::off,
      host_ns.empty() || !any_ns ? "" : "the host's: " + host_ns);
  const LayerStatus landlock = landlock::layer_status(spec.landlock, plan.landlock);
  add(landlock.layer, landlock.state, landlock.detail);
  add(Layer::seccomp, plan.seccomp.enabled ? LayerState::enforced : LayerState::off, "");
  report_cgroups(r, spec.limits, group);
  add(Layer::capabilities,
      plan.caps.unenforced.empty() ? LayerState::enforced : LayerState::degraded,
      join(plan.caps.unenforced));
  return r;
}

// Before the cgroups are made (`cgroups_made` false), their entry is not
// known yet and is not checked.
Result<void> check_required(const JailSpec& spec, const LayerReport& report,
                            bool cgroups_made = true) {
  for (const auto& l : report.layers) {
    if (!is_required(spec, l.layer) || l.state == LayerState::enforced) continue;
    if (l.layer == Layer::cgroups && !cgroups_made) continue;
    return std::unexpected(
        step_error("require", std::string("required layer ") + layer_name(l.layer),
                   std::string(l.state == LayerState::off ? "switched off by the spec"
                                                          : "not enforced: " + l.detail)));
  }
  return {};
}

constexpr const char* kUsernsRemedy =
    "user namespaces are unavailable to this user: check user.max_user_namespaces, "
    "kernel.unprivileged_userns_clone or the AppArmor userns restriction; brig doctor says which";

// clone3's errnos for "no user namespace for you" (limits, sysctls, LSMs).
bool userns_refused(int err) {
  return err == EPERM || err == ENOSPC || err == EUSERS || err == EACCES;
}

// The Landlock + seccomp tier (DESIGN.md): no namespaces at all, for a spec
// that does not require them. Without a mount namespace the filesystem is
// limited by Landlock alone, and without a network namespace Landlock's TCP
// rules are the only network boundary, so they are switched to deny-all. No
// Landlock or no seccomp: nothing meaningful is left, refuse.
Result<void> degrade_to_no_namespaces(const JailSpec& spec, ChildPlan& plan, LayerReport& report,
                                      int err) {
  // Without a user namespace, a root launcher's jail would be host root:
  // never, for a spec that maps the jail's root elsewhere.
  if (plan.init_takes_ids)
    return std::unexpected(Error{"clone3 with the jail's namespaces", "clone3",
                                 std::string(::strerror(err)) + " (" + kUsernsRemedy +
                                     "); the jail's root maps to host uid " +
                                     std::to_string(spec.identity.outside_uid) +
                                     ", which needs a user namespace",
                                 err});
  if (plan.landlock.abi == 0 || !plan.seccomp.enabled)
    return std::unexpected(Error{"clone3 with the jail's namespaces", "clone3",
                                 std::string(::strerror(err)) + " (" + kUsernsRemedy +
                                     "); without namespaces brig needs both Landlock and seccomp",
                                 err});
  LandlockRules rules = spec.landlock;
  rules.restrict_tcp = true;
  rules.bind_tcp.clear();
  rules.connect_tcp.clear();
  auto ll = landlock::prepare(rules);
  if (!ll) return std::unexpected(at_step("landlock", std::move(ll.error())));
  plan.landlock = std::move(*ll);
  auto caps = caps::prepare(Namespaces{false, false, false, false, false, false, false});
  if (!caps) return std::unexpected(at_step("caps", std::move(caps.error())));
  plan.caps = std::move(*caps);
  plan.mounts = mounts::Plan{};
  plan.switch_ids = plan.drop_groups = plan.init_takes_ids = false;
  plan.pid_namespace = false;
  plan.new_netns = false;
  plan.set_hostname = false;
  for (auto& l : report.layers) {
    if (l.layer == Layer::namespaces) {
      l.state = LayerState::degraded;
      l.detail = std::string("user namespaces refused (") + ::strerror(err) +
                 "): no mount, pid, network, ipc or uts isolation; files are limited by Landlock "
                 "alone (read-only subtrees and masks inside granted paths are not enforced), the "
                 "network by Landlock's TCP rules alone, and a process that leaves the command's "
                 "process group can outlive the jail";
    }
    if (l.layer == Layer::landlock && !plan.landlock.unenforced.empty()) {
      l.state = LayerState::degraded;
      l.detail.clear();
      for (const auto& u : plan.landlock.unenforced) l.detail += (l.detail.empty() ? "" : "; ") + u;
    }
    if (l.layer == Layer::capabilities && !plan.caps.unenforced.empty()) {
      l.state = LayerState::degraded;
      l.detail.clear();
      for (const auto& u : plan.caps.unenforced) l.detail += (l.detail.empty() ? "" : "; ") + u;
    }
  }
  return check_required(spec, report, /*cgroups_made=*/false);
}

// Once per process: groups a killed brig left behind.
void sweep_once() {
  static std::once_flag once;
  std::call_once(once, [] { cgroups::sweep_stale(); });
}

// libseccomp takes milliseconds to compile the profile, and the result
// depends only on the SeccompSpec: a spawner compiles it once.
Result<seccomp::Prepared> prepare_seccomp(const SeccompSpec& spec) {
  static std::optional<std::pair<SeccompSpec, seccomp::Prepared>> cache;
  if (!cache || cache->first != spec) {
    auto sc = seccomp::prepare(spec);
    if (!sc) return std::unexpected(at_step("seccomp", std::move(sc.error())));
    cache.emplace(spec, std::move(*sc));
  }
  return cache->second;
}

// Which file each bind's host source is (zeros when it cannot be stat'ed: a
// missing optional source, or the jail's own like /proc/sys), and for a
// tree that keeps its owner, that owner (its idmapping).
std::vector<BindSourceId> bind_source_ids(const mounts::Plan& plan) {
  std::vector<BindSourceId> ids;
  for (const mounts::Op& op : plan.ops) {
    if (op.kind != mounts::Op::Kind::bind && op.kind != mounts::Op::Kind::attach) continue;
    struct stat st {};
    BindSourceId id;
    if (!op.host.empty() && ::stat(op.host.c_str(), &st) == 0) {
      id = {st.st_dev, st.st_ino, 0, 0};
      if (op.kind == mounts::Op::Kind::attach) {
        id.uid = st.st_uid;
        id.gid = st.st_gid;
      }
    }
    ids.push_back(id);
  }
  return ids;
}

Result<std::unique_ptr<ChildPlan>> plan_child(const JailSpec& spec, const ExecRequest& req) {
  auto p = std::make_unique<ChildPlan>();
  auto mount_plan = mounts::plan(spec, mounts::real_host());
  if (!mount_plan) return std::unexpected(at_step("mount", std::move(mount_plan.error())));
  p->mounts = std::move(*mount_plan);
  if (!req.argv.empty()) p->exec = exec::prepare(req);  // else: awaiting, it comes later
  p->cwd = req.cwd.empty() ? "/" : req.cwd;
  p->pid_namespace = spec.namespaces.pid;
  p->new_netns = spec.namespaces.net && spec.network == NetworkMode::none;
  p->set_hostname = spec.namespaces.uts;
  p->hostname = spec.hostname;
  if (spec.namespaces.user) {
    const bool other_ids =
        ::geteuid() != spec.identity.outside_uid || ::getegid() != spec.identity.outside_gid;
    p->init_takes_ids = other_ids && !spec.identity.map_launcher;
    p->host_uid = spec.identity.outside_uid;
    p->switch_ids = other_ids && spec.identity.map_launcher;
    p->uid = spec.identity.inside_uid;
    p->gid = spec.identity.inside_gid;
    p->drop_groups = ::geteuid() == 0 && !p->init_takes_ids;
  }
  auto caps = caps::prepare(spec.namespaces);
  if (!caps) return std::unexpected(at_step("caps", std::move(caps.error())));
  p->caps = std::move(*caps);
  auto ll = landlock::prepare(spec.landlock);
  if (!ll) return std::unexpected(at_step("landlock", std::move(ll.error())));
  p->landlock = std::move(*ll);
  p->seccomp = BRIG_TRY(prepare_seccomp(spec.seccomp));
  p->code_pages = process::code_pages();
  return p;
}

// A child process of the launcher's own that does bounded work and exits
// (the network namespace's helper): waited for and reaped when this goes.
class Reaped {
 public:
  explicit Reaped(int pidfd) : pidfd_(pidfd) {}
  Reaped(const Reaped&) = delete;
  Reaped& operator=(const Reaped&) = delete;
  ~Reaped() {
    siginfo_t info{};
    while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                    WEXITED) != 0 &&
           errno == EINTR) {
    }
  }

 private:
  UniqueFd pidfd_;
};

// Where each fd goes in the child (ChildPlan's fixed numbers); netns: the
// child's end of the network namespace helper's socket, or -1.
Result<void> plan_fds(ChildPlan& p, const ExecRequest& req, int status_w, int watch_r, int sync,
                      int netns, const std::vector<idmap::Tree>& trees) {
  const int stdio[3] = {req.stdin_fd < 0 ? 0 : req.stdin_fd, req.stdout_fd < 0 ? 1 : req.stdout_fd,
                        req.stderr_fd < 0 ? 2 : req.stderr_fd};
  for (int i = 0; i < 3; ++i) {
    if (::fcntl(stdio[i], F_GETFD) < 0)
      return std::unexpected(step_sys_error(
          "fds", "stdio fd " + std::to_string(stdio[i]) + " for fd " + std::to_string(i), errno));
    p.fds.moves.push_back({stdio[i], i, false});
  }
  p.fds.moves.push_back({status_w, ChildPlan::kStatusFd, true});
  p.fds.moves.push_back({watch_r, ChildPlan::kWatchFd, true});
  p.fds.moves.push_back({sync, ChildPlan::kSyncFd, true});
  if (netns >= 0) p.fds.moves.push_back({netns, ChildPlan::kNetnsFd, true});
  // Every attach op has its number; one without a tree (a missing source)
  // stays closed, which the child reads as ENOENT.
  int next = ChildPlan::kFirstTreeFd;
  for (const mounts::Op& op : p.mounts.ops)
    if (op.kind == mounts::Op::Kind::attach) next = std::max(next, op.fd + 1);
  for (const idmap::Tree& t : trees)
    if (t.fd) p.fds.moves.push_back({t.fd.get(), t.child_fd, true});
  p.fds.first_unused = next;
  return {};
}

// What the command's caller should know about the workspace's .git after
// the jail (jail/steps/git_state.h); empty when all went as planned.
std::string git_warning(const StatusRecord& r) {
  std::string w;
  if (r.git_fallback != 0)
    w = std::string(
            "the workspace's .git was read-only as a whole in this jail: the kernel "
            "refused the private layer git's state files need (overlayfs: ") +
        std::strerror(r.git_fallback) + "), so git could read but not commit";
  if (r.git_unsaved > 0)
    w = std::to_string(r.git_unsaved) +
        " of the changes the command made in the workspace's .git could not be written back: "
        "git itself would not write them (an index with paths outside the worktree, hidden "
        "entries or a split index; HEAD deleted or not a ref; a symlink, fifo or oddly named "
        "file in objects/, refs/ or logs/; a loose object that is not what its id says; a "
        "replace ref), or they were in a pack (git gc or a large fetch: run git gc on the host "
        "instead); after a pack or a refused object, no ref, HEAD or index came back either, "
        "since they could name what did not; or another git held the lock for over half a second "
        "(docs/jail.md, "
        "\"git\")";
  return w;
}

std::string describe_failure(const ChildPlan& p, const cgroups::Group& group, const StatusRecord& r,
                             const std::string& argv0) {
  const Step step = static_cast<Step>(r.step);
  std::string what = step_name(step);
  const auto i = static_cast<size_t>(r.index);
  switch (step) {
    case Step::mount:
      if (r.index >= 0 && i < p.mounts.ops.size()) what = p.mounts.ops[i].what;
      break;
    case Step::cgroup:
      if (r.index >= 0 && i < group.paths.size()) what = "join cgroup " + group.paths[i];
      break;
    case Step::rlimit:
      if (r.index >= 0 && i < p.rlimits.size())
        what = "setrlimit " + std::to_string(p.rlimits[i].resource) + " to " +
               std::to_string(p.rlimits[i].value.rlim_cur);
      break;
    case Step::chdir:
      what = "chdir " + p.cwd;
      break;
    case Step::exec:
      what = "execve " + argv0;
      if (p.exec.candidates.size() > 1 || p.exec.candidates[0] != argv0)
        what += " (searched the jail's PATH)";
      break;
    default:
      break;
  }
  std::string why = ::strerror(r.sys_errno);
  if (step == Step::mount && r.sys_errno == ELOOP)
    why +=
        " (a symlink where the plan found none: brig never follows a symlink in a mount path, "
        "since a jail could have planted it)";
  if (step == Step::mount && r.sys_errno == EACCES && p.init_takes_ids)
    why += " (the jail is built as its own root, host uid " + std::to_string(p.host_uid) +
           ", which may not search a directory on this path, like a 0700 /root: make the path "
           "reachable to that uid, leave it out of the policy, or choose identity.as_root = "
           "\"user\" or, knowingly, \"dangerously_host_root\")";
  return what + ": " + why;
}

}  // namespace

RunningJail::RunningJail() = default;
RunningJail::RunningJail(RunningJail&&) noexcept = default;
RunningJail& RunningJail::operator=(RunningJail&& o) noexcept {
  if (this != &o) {
    kill_and_reap();
    pid_ = o.pid_;
    pidfd_ = std::move(o.pidfd_);
    status_fd_ = std::move(o.status_fd_);
    watch_fd_ = std::move(o.watch_fd_);
    command_fd_ = std::move(o.command_fd_);
    bind_sources_ = std::move(o.bind_sources_);
    cgroup_ = std::move(o.cgroup_);
    layers_ = std::move(o.layers_);
    started_ = o.started_;
    deadline_ = o.deadline_;
    plan_ = std::move(o.plan_);
    pid_namespace_ = o.pid_namespace_;
    steps_ = std::move(o.steps_);
    reaped_ = o.reaped_;
    o.reaped_ = true;
  }
  return *this;
}
RunningJail::~RunningJail() {
  kill_and_reap();
}

void RunningJail::kill_and_reap() {
  if (!reaped_ && pidfd_) {
    reaped_ = true;
    if (!pid_namespace_) {
      // No pid namespace to end: the init must kill the command's process
      // group itself, given a moment before it is killed too.
      signal(pid1::kLauncherDiedSignal);
      pollfd p = {pidfd_.get(), POLLIN, 0};
      ::poll(&p, 1, 2000);
    }
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    siginfo_t info{};
    while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                    WEXITED) != 0 &&
           errno == EINTR) {
    }
  }
  cgroups::remove(cgroup_);
}

int RunningJail::signal(int sig) const {
  if (reaped_) return ESRCH;
  return ::syscall(SYS_pidfd_send_signal, pidfd_.get(), sig, nullptr, 0) == 0 ? 0 : errno;
}

// spawn(), or with `awaiting` spawn_awaiting() (req: only its stdio, all
// /dev/null).
Result<RunningJail> spawn_jail(const JailSpec& spec, const ExecRequest& req, SpawnOptions options,
                          bool awaiting) {
  const auto started = RunningJail::Clock::now();
  if (auto v = validate(spec); !v)
    return std::unexpected(at_step("validate", std::move(v.error())));
  if (!awaiting)
    if (auto v = validate(req); !v)
      return std::unexpected(at_step("validate", std::move(v.error())));

  RunningJail j;
  j.started_ = started;
  if (spec.limits.wall_time && !awaiting) j.deadline_ = started + *spec.limits.wall_time;
  if (options.time_steps) j.steps_ = BRIG_TRY(StepClock::create());
  const StepStamps stamps = j.steps_.stamps();
  j.plan_ = BRIG_TRY(plan_child(spec, req));
  ChildPlan& plan = *j.plan_;
  plan.stamps = stamps;
  plan.await_command = awaiting;
  if (awaiting) j.bind_sources_ = bind_source_ids(plan.mounts);

  plan.rlimits = process::plan_rlimits(spec.limits);
  j.layers_ = report_layers(spec, plan, j.cgroup_);
  BRIG_TRY_VOID(check_required(spec, j.layers_, /*cgroups_made=*/false));

  int sync[2], status[2], watch[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) != 0)
    return std::unexpected(step_sys_error("sync", "socketpair", errno));
  UniqueFd sync_parent(sync[0]), sync_child(sync[1]);
  if (::pipe2(status, O_CLOEXEC) != 0)
    return std::unexpected(step_sys_error("sync", "status pipe", errno));
  j.status_fd_.reset(status[0]);
  UniqueFd status_w(status[1]);
  if (::pipe2(watch, O_CLOEXEC) != 0)
    return std::unexpected(step_sys_error("sync", "watch pipe", errno));
  UniqueFd watch_r(watch[0]);
  j.watch_fd_.reset(watch[1]);
  UniqueFd netns_helper_end, netns_child_end;
  if (plan.new_netns) {
    int netns[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, netns) != 0)
      return std::unexpected(step_sys_error("netns", "socketpair", errno));
    netns_helper_end.reset(netns[0]);
    netns_child_end.reset(netns[1]);
  }
  // The workspace's idmapped tree (keep_owner binds), made here in the
  // host's user namespace: the jail's own cannot.
  auto trees = idmap::prepare(plan.mounts, spec.identity);
  if (!trees) return std::unexpected(at_step("mount", std::move(trees.error())));
  BRIG_TRY_VOID(plan_fds(plan, req, status_w.get(), watch_r.get(), sync_child.get(),
                         netns_child_end ? netns_child_end.get() : -1, *trees));
  plan.sync_fd = sync_child.get();
  plan.sync_parent_fd = sync_parent.get();
  plan.status_fd_before_fds = status_w.get();
  stamps.mark(StepMark::planned);

  // The network namespace (plan.new_netns) is made by a helper below.
  uint64_t flags = clone::namespace_flags(spec.namespaces, /*new_net=*/false);
  int pidfd = -1;
  pid_t pid = clone::clone3_with_pidfd(flags, &pidfd);
  if (pid < 0 && spec.namespaces.user && userns_refused(errno) &&
      !is_required(spec, Layer::namespaces)) {
    BRIG_TRY_VOID(degrade_to_no_namespaces(spec, plan, j.layers_, errno));
    flags = 0;
    pid = clone::clone3_with_pidfd(flags, &pidfd);
  }
  if (pid < 0) {
    const int err = errno;
    std::string why = ::strerror(err);
    if (spec.namespaces.user && userns_refused(err)) why += std::string(" (") + kUsernsRemedy + ")";
    return std::unexpected(Error{"clone3 with the jail's namespaces", "clone3", why, err});
  }
  if (pid == 0) contain(plan);  // never returns

  stamps.mark(StepMark::cloned);
  j.pid_ = pid;
  j.pidfd_.reset(pidfd);
  sync_child.reset();
  status_w.reset();
  watch_r.reset();
  netns_child_end.reset();
  trees->clear();

  j.pid_namespace_ = plan.pid_namespace;
  cpu_set_t cpus;
  const bool have_cpus = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0;

  // The network namespace, made by a helper (net.h says why) on another CPU
  // than the child's, started before the child is released: a new process
  // starts on its parent's CPU and waits there while the parent runs, even
  // with other CPUs idle. The helper needs no id maps (only its
  // capabilities in the jail's user namespace). It is reaped before the
  // cgroups are sent, so before the command can start: in the jail's user
  // namespace, under the jail's uid, it counts against the command's
  // RLIMIT_NPROC until reaped.
  std::optional<Reaped> helper;
  if (plan.new_netns) {
    UniqueFd userns;
    if (flags & CLONE_NEWUSER) {
      // Opened while the child is still dumpable (it is not from its step 3 on).
      const std::string path = "/proc/" + std::to_string(pid) + "/ns/user";
      userns.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!userns) return std::unexpected(step_sys_error("netns", "open " + path, errno));
    }
    int helper_pidfd = -1;
    const pid_t helper_pid = clone::clone3_with_pidfd(0, &helper_pidfd);
    if (helper_pid < 0) return std::unexpected(step_sys_error("netns", "clone3 the helper", errno));
    if (helper_pid == 0) net::make_in_helper(userns ? userns.get() : -1, netns_helper_end.get());
    helper.emplace(helper_pidfd);
    if (have_cpus) clone::move_to_other_cpu(helper_pid, cpus);
    netns_helper_end.reset();
    stamps.mark(StepMark::netns_helper_started);
  }
  if (flags & CLONE_NEWUSER) {
    if (auto ok = userns::write_maps_from_parent(pid, spec.identity,
                                                 plan.drop_groups || plan.init_takes_ids);
        !ok)
      return std::unexpected(at_step("uid_map", std::move(ok.error())));  // ~RunningJail kills the child
    stamps.mark(StepMark::maps_written);
  }
  const char go = 1;
  if (::write(sync_parent.get(), &go, 1) != 1)
    return std::unexpected(step_sys_error("sync", "release the jail's child", errno));
  stamps.mark(StepMark::released);

  // The cgroups (~0.2 ms as root, mostly mkdir) share this CPU with the
  // child, which needs them only once its mounts are built, and the helper's
  // namespace too.
  j.cgroup_ = cgroups::create(spec.limits);
  report_cgroups(j.layers_, spec.limits, j.cgroup_);
  BRIG_TRY_VOID(check_required(spec, j.layers_));  // ~RunningJail kills the child
  stamps.mark(StepMark::cgroups_made);
  if (helper) {
    helper.reset();
    stamps.mark(StepMark::netns_helper_reaped);
  }
  // EPIPE: the child has already failed (and exited); wait() says why.
  if (int e = cgroups::send_to_child(sync_parent.get(), j.cgroup_); e != 0 && e != EPIPE)
    return std::unexpected(step_sys_error("cgroup", "hand the cgroups to the jail's child", e));
  // The child has its own copies of the fds; the launcher keeps the paths.
  j.cgroup_.procs_fds.clear();
  j.cgroup_.brig_dir_fds.clear();
  stamps.mark(StepMark::cgroups_sent);

  // The child waits for nothing more from this process, whose remaining
  // work (below, and brig run's) moves to another CPU, taking back its
  // affinity once there: the child keeps this one to itself.
  if (have_cpus && clone::move_to_other_cpu(0, cpus)) ::sched_setaffinity(0, sizeof cpus, &cpus);

  // Sweeping reads /proc and the cgroup directories, ~0.05 ms that need not
  // delay the jail either. Its own group is named for this live process, so
  // it is never swept.
  sweep_once();
  stamps.mark(StepMark::spawn_returned);
  if (awaiting) j.command_fd_ = std::move(sync_parent);
  return j;
}

Result<RunningJail> spawn(const JailSpec& spec, const ExecRequest& req, SpawnOptions options) {
  return spawn_jail(spec, req, options, /*awaiting=*/false);
}

Result<RunningJail> spawn_awaiting(const JailSpec& spec, SpawnOptions options) {
  UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return std::unexpected(step_sys_error("fds", "open /dev/null", errno));
  ExecRequest none;
  none.stdin_fd = none.stdout_fd = none.stderr_fd = dev_null.get();
  return spawn_jail(spec, none, options, /*awaiting=*/true);
}

Result<void> start_command(RunningJail& j, const ExecRequest& req,
                           std::optional<std::chrono::milliseconds> wall_time) {
  const char* what = "give a jail built ahead its command";
  if (!j.command_fd_ || j.reaped_)
    return std::unexpected(Error{what, std::to_string(j.pid_),
                                 "it is not awaiting one (it was given one already)", EALREADY});
  if (auto v = validate(req); !v) return std::unexpected(at_step("validate", std::move(v.error())));
  auto encoded = command::encode(req);
  if (!encoded) return std::unexpected(std::move(encoded.error()));
  UniqueFd dev_null;
  int stdio[3] = {req.stdin_fd, req.stdout_fd, req.stderr_fd};
  for (int& fd : stdio) {
    if (fd >= 0) continue;
    if (!dev_null) dev_null.reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!dev_null) return std::unexpected(sys_error(what, "open /dev/null", errno));
    fd = dev_null.get();
  }
  // For the messages of a failed chdir or execve, as a fresh jail has them.
  j.plan_->exec = exec::prepare(req);
  j.plan_->cwd = req.cwd.empty() ? "/" : req.cwd;
  j.started_ = RunningJail::Clock::now();
  if (wall_time) j.deadline_ = j.started_ + *wall_time;
  // Once only, whether or not it arrives: a jail is never given a second.
  UniqueFd socket = std::move(j.command_fd_);
  if (int e = command::send(socket.get(), *encoded, stdio))
    return std::unexpected(sys_error(what, std::to_string(j.pid_), e));
  return {};
}

bool built_from_current_host(const RunningJail& j, const JailSpec& spec) {
  if (!j.plan_) return false;
  auto now = mounts::plan(spec, mounts::real_host());
  return now && *now == j.plan_->mounts && bind_source_ids(*now) == j.bind_sources_;
}

namespace {

// The records the init has written so far; every read is non-blocking.
struct StatusSeen {
  std::optional<StatusRecord> failure;  // the first setup failure
  std::optional<StatusRecord> status;   // the command's status: the init is exiting
  bool eof = false;                     // the init has exited (or closed the pipe)
};

void read_status(int fd, StatusSeen& seen) {
  StatusRecord r;
  ssize_t got;
  while ((got = ::read(fd, &r, sizeof r)) == sizeof r) {
    if (r.kind == StatusRecord::setup_failed && !seen.failure) seen.failure = r;
    if (r.kind == StatusRecord::command_status) seen.status = r;
  }
  if (got == 0) seen.eof = true;
}

}  // namespace

Result<Outcome> RunningJail::wait_for(RunningJail& j, std::optional<Clock::time_point> deadline,
                                 int signal_fd, bool until_status) {
  if (j.reaped_)
    return std::unexpected(
        Error{"wait for a jail", std::to_string(j.pid_), "already waited for", 0});
  if (j.deadline_ && (!deadline || *j.deadline_ < *deadline)) deadline = j.deadline_;
  bool timed_out = false;
  bool grace = false;  // no pid namespace: the init was told to shut down
  bool init_exiting = false;
  StatusSeen seen;
  ::fcntl(j.status_fd_.get(), F_SETFL, O_NONBLOCK);
  // poll ignores the entries whose fd is negative.
  pollfd fds[3] = {{j.pidfd_.get(), POLLIN, 0},
                   {signal_fd, POLLIN, 0},
                   {until_status ? j.status_fd_.get() : -1, POLLIN, 0}};
  for (;;) {
    int timeout_ms = -1;
    if (deadline && !timed_out) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(*deadline - RunningJail::Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    const int n = ::poll(fds, 3, timeout_ms);
    if (n < 0 && errno != EINTR)
      return std::unexpected(sys_error("poll the jail's pidfd", "", errno));
    if (n == 0 && grace) {
      // The init did not finish shutting down within its grace period.
      grace = false;
      timed_out = true;
      j.signal(SIGKILL);
      continue;
    }
    if (n == 0 && deadline && !timed_out) {
      // One SIGKILL to the init ends the pid namespace, so every process of
      // the jail, grandchildren included. Without one, the init shuts the
      // jail down itself (kills the command's process group), and is killed
      // if it has not within a grace period.
      if (j.pid_namespace_) {
        timed_out = true;
        j.signal(SIGKILL);
      } else {
        j.signal(pid1::kLauncherDiedSignal);
        deadline = RunningJail::Clock::now() + std::chrono::seconds(2);
        grace = true;
      }
      continue;
    }
    if (n > 0 && (fds[1].revents & POLLIN)) {
      signalfd_siginfo si;
      if (::read(signal_fd, &si, sizeof si) == sizeof si) j.signal(static_cast<int>(si.ssi_signo));
    }
    if (n > 0 && fds[2].revents) {
      read_status(j.status_fd_.get(), seen);
      // The init reports the command's status once it has killed and reaped
      // every other process of the jail and removed its cgroups: what is
      // left is its own exit, with the teardown of the jail's namespaces
      // (~0.3 ms), which need not delay the caller.
      if (seen.status && !timed_out && !grace) {
        init_exiting = true;
        break;
      }
      if (seen.eof) fds[2].fd = -1;
    }
    if (n > 0 && (fds[0].revents & POLLIN)) break;
  }
  j.steps_.stamps().mark(StepMark::status_received);
  siginfo_t info{};
  struct rusage ru {};
  while (!init_exiting &&
         ::syscall(SYS_waitid, P_PIDFD, j.pidfd_.get(), &info, WEXITED, &ru) != 0) {
    if (errno != EINTR)
      return std::unexpected(sys_error("waitid the jail's init", std::to_string(j.pid_), errno));
  }
  // An exiting init is neither waited for nor killed (~RunningJail): it ends by
  // itself, and its zombie goes when the caller exits.
  j.reaped_ = true;
  const auto ended = RunningJail::Clock::now();
  if (init_exiting && seen.status->cgroups_left == 0) j.cgroup_.paths.clear();
  cgroups::remove(j.cgroup_);

  // Every record was written before the init exited; only what the pipe
  // already holds counts.
  read_status(j.status_fd_.get(), seen);
  const std::optional<StatusRecord>& failure = seen.failure;
  const std::optional<StatusRecord>& status = seen.status;

  Outcome o;
  if (failure) {
    o = setup_failed_outcome(
        step_name(static_cast<Step>(failure->step)), failure->sys_errno,
        describe_failure(*j.plan_, j.cgroup_, *failure,
                         j.plan_->exec.strings.empty() ? "" : j.plan_->exec.strings[0]));
  } else if (timed_out || grace) {
    o.kind = Outcome::Kind::timed_out;
  } else if (status && WIFEXITED(status->wait_status)) {
    o.kind = Outcome::Kind::exited;
    o.exit_code = WEXITSTATUS(status->wait_status);
  } else if (status && WIFSIGNALED(status->wait_status)) {
    o.kind = Outcome::Kind::signaled;
    o.signal = WTERMSIG(status->wait_status);
  } else if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) {
    o.kind = Outcome::Kind::signaled;  // the init itself was killed from outside
    o.signal = info.si_status;
  } else {
    o = setup_failed_outcome("init", 0,
                             "the jail's init exited with status " +
                                 std::to_string(info.si_status) + " before starting the command");
  }
  if (status) o.warning = git_warning(*status);
  o.duration = ended - j.started_;
  o.rusage = ru;
  o.layers = j.layers_;
  if (j.steps_.active()) o.steps = j.steps_.read(j.started_);
  return o;
}

Result<Outcome> wait_forwarding(RunningJail& j, std::optional<RunningJail::Clock::time_point> deadline,
                                int signal_fd) {
  return RunningJail::wait_for(j, deadline, signal_fd, /*until_status=*/false);
}

Result<Outcome> wait(RunningJail& j, std::optional<RunningJail::Clock::time_point> deadline) {
  return wait_forwarding(j, deadline, -1);
}

Result<Outcome> wait_until_status(RunningJail& j, std::optional<RunningJail::Clock::time_point> deadline) {
  return RunningJail::wait_for(j, deadline, -1, /*until_status=*/true);
}

Outcome run(const JailSpec& spec, const ExecRequest& request) {
  sigset_t forwarded, old;
  sigemptyset(&forwarded);
  for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH})
    sigaddset(&forwarded, s);
  ::sigprocmask(SIG_BLOCK, &forwarded, &old);
  UniqueFd sigfd(::signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));
  Outcome o;
  // Computed before, and freed after, the wait: nothing between the release
  // and the poll should run code it did not need (each page it runs maps its
  // neighbours back in too).
  const std::vector<process::PageRange> code = process::code_pages();
  auto j = spawn(spec, request);
  // From here brig run only waits: what it ran to load the policy and plan
  // the jail need not stay resident while the command runs.
  if (j) process::release_code_pages(code);
  if (!j) {
    o = setup_failed_outcome(j.error().where, j.error().sys_errno, j.error().to_string());
  } else if (auto w = RunningJail::wait_for(*j, std::nullopt, sigfd.get(), /*until_status=*/true); !w) {
    o = setup_failed_outcome("wait", w.error().sys_errno, w.error().to_string());
  } else {
    o = std::move(*w);
  }
  sigfd.reset();
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  return o;
}

}  // namespace brig::jail
